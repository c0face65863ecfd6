"""Our verified cost ledger, exported in a competition's ledger format.

TinyRouter's `TRINITY_COST_LEDGER` check (`src/trinity/llm/cost_ledger.py`) chains one line per
call: `{"m":"<short model>","p":<prompt tokens>,"c":<completion tokens>,"h":"<sha256>"}` with
`h = sha256(prev_h + '{"m":"…","p":…,"c":…}')`, the first `prev_h` empty; it prices each line
from its own table (`openrouter_pricing.py`) and compares that total with the receipt within
$0.05. The export is derived from our ledger after verifying our chain, record for record, so
both stay verifiable: `verify_mpc_chain` re-checks the export, and each exported line keeps the
token counts of the record of ours at the same position.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trinity.competition.profiles import Profile
from trinity.errors import InputError
from trinity.io import atomic_write_text
from trinity.pool.ledger import read_ledger, verify_ledger


def _short(model: str) -> str:
    return model.rsplit("/", 1)[-1]


def mpc_payload(model: str, prompt_tokens: int, completion_tokens: int) -> str:
    return f'{{"m":{json.dumps(_short(model))},"p":{int(prompt_tokens)},"c":{int(completion_tokens)}}}'


@dataclass
class LedgerExport:
    path: Path
    n_records: int
    tip: str
    total_usd_at_their_prices: float
    unpriced_models: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.path.name,
            "format": "mpc-chain",
            "records": self.n_records,
            "tip": self.tip,
            "total_usd_at_competition_prices": round(self.total_usd_at_their_prices, 6),
            "unpriced_models": self.unpriced_models,
        }


def their_price(p: Profile, model: str, prompt_tokens: int, completion_tokens: int) -> tuple[float, bool]:
    """$ of one call at the competition's table; unknown models at the mean rates (as theirs does).
    (cost, priced)."""
    prices = p.ledger_prices
    short = _short(model)
    if short in prices:
        pin, pout = prices[short]
        priced = True
    else:
        pin = sum(v[0] for v in prices.values()) / max(1, len(prices))
        pout = sum(v[1] for v in prices.values()) / max(1, len(prices))
        priced = False
    return prompt_tokens / 1e6 * pin + completion_tokens / 1e6 * pout, priced


def export_ledger(p: Profile, ledger: str | os.PathLike[str], out: str | os.PathLike[str]) -> LedgerExport:
    """Verify our ledger, then write it in the profile's format to `out`."""
    if p.ledger_format != "mpc-chain":
        raise InputError(f"{p.title} has no ledger format to export to")

    rep = verify_ledger(ledger)
    if not rep.ok:
        raise InputError(f"ledger {ledger} does not verify ({rep.problem}); it cannot be exported")
    prev, lines, total, unpriced = "", [], 0.0, set()
    for rec in read_ledger(ledger):  # every record verified above: none fails to type
        payload = mpc_payload(rec.model, rec.prompt_tokens, rec.completion_tokens)
        prev = hashlib.sha256((prev + payload).encode()).hexdigest()
        lines.append(payload[:-1] + f',"h":"{prev}"}}')
        cost, priced = their_price(p, rec.model, rec.prompt_tokens, rec.completion_tokens)
        total += cost
        if not priced:
            unpriced.add(_short(rec.model))
    atomic_write_text(Path(out), "".join(ln + "\n" for ln in lines))
    return LedgerExport(Path(out), len(lines), prev, total, sorted(unpriced))


def verify_mpc_chain(path: str | os.PathLike[str]) -> tuple[bool, int, str]:
    """(valid, records, problem) of an exported ledger, checked the way TinyRouter checks it."""
    prev, n = "", 0
    for i, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
            h = rec.pop("h")
            payload = mpc_payload(rec.pop("m"), int(rec.pop("p")), int(rec.pop("c")))
        except (ValueError, KeyError, TypeError, AttributeError):
            return False, n, f"line {i}: not a ledger record"
        if rec:
            return False, n, f"line {i}: unexpected fields {sorted(rec)}"
        prev = hashlib.sha256((prev + payload).encode()).hexdigest()
        if prev != h:
            return False, n, f"line {i}: hash mismatch"
        n += 1
    return True, n, ""
