"""The rewards notice: whether the competitions' repositories are paid by Gittensor.

Shipped as `rewards_notice.json` (the date it was checked and its source). A user refreshes it by
writing their own copy to `$XDG_CONFIG_HOME/minertui/rewards_notice.json` (default
`~/.config/minertui/`), which wins over the shipped one. The notice states what the source said on
that date and promises nothing; an unreadable override is reported, and the shipped copy is used.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

NOTICE_FILE = "rewards_notice.json"
SHIPPED = Path(__file__).with_name(NOTICE_FILE)


@dataclass(frozen=True)
class RewardsNotice:
    text: str
    checked: str
    source: str
    path: str
    problem: str | None = None  # why the user's override was not used

    def line(self) -> str:
        out = f"{self.text} ({self.source}, checked {self.checked})"
        return f"{out} [{self.problem}]" if self.problem else out


def override_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".config") / "minertui" / NOTICE_FILE


def _parse(path: Path) -> RewardsNotice:
    doc = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or not all(
        isinstance(doc.get(k), str) and doc[k].strip() for k in ("text", "checked", "source")
    ):
        raise ValueError("needs non-empty string fields text, checked, source")
    return RewardsNotice(doc["text"].strip(), doc["checked"].strip(), doc["source"].strip(), str(path))


def rewards_notice() -> RewardsNotice:
    user = override_path()
    problem = None
    if user.is_file():
        try:
            return _parse(user)
        except (OSError, UnicodeDecodeError, ValueError) as e:  # JSONDecodeError is a ValueError
            problem = f"{user} ignored: {str(e).splitlines()[0][:120]}"
    n = _parse(SHIPPED)
    return RewardsNotice(n.text, n.checked, n.source, n.path, problem)
