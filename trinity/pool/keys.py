"""API keys: from the environment, or from a private env file outside the repository.

A key lives only in memory (the client's request headers). It is never put in argv, logs,
events, traces, the ledger, the cache key, or any file we write; `redact()` scrubs it out of any
text we keep from a provider (error bodies can echo headers).

Env file format: `NAME=value` lines, `#` comments, optional `export ` prefix and quotes. The file
must not be readable by group or others (chmod 600) and must not sit inside the repository.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from trinity.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[2]


def default_env_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "minertui" / "secrets.env"


def _work_tree(start: Path) -> Path | None:
    """The top of the git working tree that contains `start`, if any."""
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


def _inside_repo(path: Path) -> Path | None:
    """The repository (this project's checkout, or the one the command runs in) that would hold
    `path`, if any."""
    path = path.resolve()
    for top in (_work_tree(REPO_ROOT), _work_tree(Path.cwd().resolve())):
        if top is None:
            continue
        try:
            path.relative_to(top)
        except ValueError:
            continue
        return top
    return None


def read_env_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """Parse a private env file; refuse one that others can read or that lives in the repo."""
    path = Path(path).expanduser()
    try:
        st = path.stat()
    except FileNotFoundError:
        raise ConfigError(f"env file not found: {path}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"env file {path} is not a regular file")
    if st.st_mode & 0o077:
        raise ConfigError(
            f"env file {path} is readable by other users (mode {stat.S_IMODE(st.st_mode):04o}); run `chmod 600 {path}`"
        )
    repo = _inside_repo(path)
    if repo is not None:
        raise ConfigError(
            f"env file {path} is inside the git repository {repo}; move it outside (e.g. "
            f"{default_env_file()}) so it can never be committed"
        )
    out: dict[str, str] = {}
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        name, sep, value = line.partition("=")
        if not sep or not name.strip().isidentifier():
            # Do not echo the line: it may hold a key.
            raise ConfigError(f"env file {path}: line {lineno} is not NAME=value")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[name.strip()] = value
    return out


def resolve_key(
    key_env: str | None, *, provider: str, env_file: str | os.PathLike[str] | None = None, optional: bool = False
) -> str | None:
    """The API key for `provider`: `$key_env`, else the env file (the explicit one, or the
    default one when it exists). None when `optional` and not found; else a ConfigError."""
    if not key_env:
        return None
    value = os.environ.get(key_env)
    if value:
        return value.strip()
    path = Path(env_file).expanduser() if env_file else default_env_file()
    if env_file or path.exists():
        value = read_env_file(path).get(key_env)
        if value:
            return value
    if optional:
        return None
    where = f" or in {path}" if (env_file or path.exists()) else ""
    raise ConfigError(
        f"no API key for provider {provider!r}: set {key_env} in the environment{where} "
        f"(or put `{key_env}=…` in a chmod-600 env file and pass --env-file)"
    )


def redact(text: str, secrets: list[str | None]) -> str:
    """`text` with every secret (and its Bearer form) replaced by ***."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    return text
