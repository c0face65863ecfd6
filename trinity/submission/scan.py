"""Checks on the files about to be committed: size cap and anything that looks like a secret.

A finding names the file and the kind of secret, never the secret itself (the message may be
printed, logged or shown in the app).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from trinity.submission.pool_config import key_values

MAX_FILE_BYTES = 10 * 1024 * 1024

# Byte patterns: files may be binary (.npy), so scan raw bytes.
SECRET_PATTERNS: tuple[tuple[str, re.Pattern[bytes]], ...] = (
    ("an OpenRouter key (sk-or-v1-…)", re.compile(rb"sk-or-v1-[A-Za-z0-9]{8,}")),
    ("a Chutes key (cpk_…)", re.compile(rb"cpk_[A-Za-z0-9._-]{8,}")),
    ("a bearer token (Bearer …)", re.compile(rb"Bearer\s+[A-Za-z0-9._~+/-]{8,}=*")),
    ("a GitHub token (ghp_/gho_/ghs_…)", re.compile(rb"gh[pousr]_[A-Za-z0-9]{20,}")),
    ("a GitHub token (github_pat_…)", re.compile(rb"github_pat_[A-Za-z0-9_]{20,}")),
    ("an API key (sk-…)", re.compile(rb"sk-[A-Za-z0-9_-]{20,}")),
)


@dataclass
class Finding:
    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def is_env_file(name: str) -> bool:
    return name == ".env" or name.startswith(".env.") or name.endswith(".env")


def scan_file(path: Path, shown_as: str, secrets: list[tuple[str, str]]) -> list[Finding]:
    out: list[Finding] = []
    if is_env_file(path.name):
        out.append(Finding(shown_as, "is an env file (.env); env files hold keys and are never committed"))
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        out.append(Finding(shown_as, f"is {size / 2**20:.1f} MB, over the {MAX_FILE_BYTES // 2**20} MB cap"))
        return out  # do not read a huge file
    data = path.read_bytes()
    for what, pat in SECRET_PATTERNS:
        if pat.search(data):
            out.append(Finding(shown_as, f"contains what looks like {what}"))
    for name, value in secrets:
        if value.encode("utf-8") in data:
            out.append(Finding(shown_as, f"contains the value of ${name}"))
    return out


def scan_files(files: list[tuple[Path, str]]) -> list[Finding]:
    """`files`: (path on disk, name to show). Findings for every problem in every file."""
    secrets = key_values()
    out: list[Finding] = []
    for path, shown in files:
        out.extend(scan_file(path, shown, secrets))
    return out
