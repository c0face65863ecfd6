"""Small file primitives every writer and reader of a run directory shares.

- `atomic_write_*`: temp file in the same dir, fsync, `os.replace`, fsync the dir — a reader
  (or a crash) sees the old file or the new one, never half of one.
- `append_jsonl`: one `write()` of a whole line on an O_APPEND descriptor (+ optional fsync), so
  concurrent readers see whole lines except, at worst, a torn final line after a crash; the next
  append starts on a fresh line after such a torn one instead of being glued onto it.
- `read_jsonl` / `JsonlTail`: readers that tolerate a torn last line (the writer may be
  mid-append) and never block the writer.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from trinity.errors import ConfigError, InputError


def canonical_json(obj: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8 kept (used for hashing)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(path.parent)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any, indent: int | None = 2) -> None:
    atomic_write_text(path, json.dumps(obj, indent=indent, ensure_ascii=False) + "\n")


def read_json(path: str | os.PathLike, what: str = "JSON file") -> Any:
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{what} not found: {path}") from None
    except IsADirectoryError:
        raise InputError(f"{what} {path} is a directory; pass a file") from None
    except UnicodeDecodeError:
        raise InputError(f"{what} {path} is not UTF-8 text; fix or regenerate it") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{what} {path} is not valid JSON ({e}); fix or regenerate it") from None


def open_append_nofollow(path: str | os.PathLike[str], mode: int = os.O_WRONLY) -> int:
    """An O_APPEND descriptor on `path` that refuses a symbolic link as the file itself (a
    tampered run directory must not make an append land outside it): InputError naming it."""
    try:
        return os.open(path, mode | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError:
        if os.path.islink(path):
            raise InputError(f"{path} is a symbolic link; a run's files are written only in place") from None
        raise


def append_jsonl(path: str | os.PathLike, obj: Any, fsync: bool = False) -> None:
    """Append one JSON object as one line with a single write on an O_APPEND descriptor."""
    line = (json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
    fd = open_append_nofollow(path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line  # a torn last line (a crash mid-append) stays alone on its line
        os.write(fd, line)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def iter_jsonl(path: str | os.PathLike, strict: bool = False) -> Iterator[tuple[int, Any]]:
    """Yield (1-based line number, object). A torn final line (no trailing newline, not JSON)
    is skipped silently; a bad line elsewhere raises InputError when `strict`, else is skipped."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"file not found: {path}") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a directory, not a JSONL file") from None
    lines = data.split(b"\n")
    complete_last = data.endswith(b"\n")
    for i, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        is_last = i == len(lines)  # only when the file does not end with "\n"
        try:
            yield i, json.loads(raw)
        except RecursionError:
            raise InputError(f"{path}: line {i} is nested too deeply; fix or delete that line") from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            if is_last and not complete_last:
                return  # torn final line: the writer is mid-append (or crashed mid-append)
            if strict:
                raise InputError(f"{path}: line {i} is not valid JSON; fix or delete that line") from None


def read_jsonl(path: str | os.PathLike, strict: bool = False) -> list[Any]:
    return [obj for _, obj in iter_jsonl(path, strict=strict)]


@dataclass
class JsonlTail:
    """Incremental reader: each call returns the whole new lines since the last one.

    Keeps a byte offset; a partial last line stays unread until its newline arrives. At most
    `max_bytes` are read per call, so a refresh stays bounded however far behind it is — except a
    single line longer than that, which is read whole (it would otherwise block the tail forever).
    If the file shrinks (replaced or truncated) it starts over and sets `reset`. Lines that are
    not JSON are skipped and their numbers kept in `bad_lines`.
    """

    path: Path
    offset: int = 0
    lineno: int = 0
    reset: bool = False
    bad_lines: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    def read_new(self, max_bytes: int | None = None) -> list[Any]:
        """The objects of the new whole lines."""
        return [obj for _, obj in self.read_new_at(max_bytes)]

    def read_new_at(self, max_bytes: int | None = None) -> list[tuple[int, Any]]:
        """(byte offset where the line starts, object) for each new whole line (`read_line_at`
        finds the line again from its offset)."""
        self.reset = False
        try:
            size = os.path.getsize(self.path)
        except FileNotFoundError:
            return []
        if size < self.offset:
            self.offset, self.lineno, self.reset = 0, 0, True
        if size == self.offset:
            return []
        want = size - self.offset if not max_bytes else min(max_bytes, size - self.offset)
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            chunk = f.read(want)
            end = chunk.rfind(b"\n")
            if end < 0 and len(chunk) == max_bytes:  # one line longer than max_bytes: read it whole
                chunk += f.readline()
                end = chunk.rfind(b"\n")
        if end < 0:
            return []
        base = self.offset
        self.offset += end + 1
        out: list[tuple[int, Any]] = []
        pos = 0
        for raw in chunk[: end + 1].split(b"\n")[:-1]:
            at = base + pos
            pos += len(raw) + 1
            self.lineno += 1
            if not raw.strip():
                continue
            try:
                out.append((at, json.loads(raw)))
            except (json.JSONDecodeError, UnicodeDecodeError):
                self.bad_lines.append(self.lineno)
        return out

    @property
    def pending(self) -> bool:
        """True while the file holds bytes this tail has not read yet."""
        try:
            return os.path.getsize(self.path) > self.offset
        except FileNotFoundError:
            return False


def read_line_at(path: str | os.PathLike, offset: int) -> Any:
    """The JSON value on the line that starts at byte `offset` (a trace's drill-down)."""
    with open(path, "rb") as f:
        f.seek(offset)
        return json.loads(f.readline())


def yaml_error(where: object, e: Exception) -> ConfigError:
    """One line for a YAML file that does not parse: where, the line, and PyYAML's problem (its
    own message spans several lines, with the offending text quoted)."""
    mark = getattr(e, "problem_mark", None)
    line = f" line {mark.line + 1}" if mark is not None else ""
    problem = " ".join(str(getattr(e, "problem", None) or "").split())
    return ConfigError(f"{where}:{line} is not valid YAML{f' ({problem})' if problem else ''}; fix it")


def safe_yaml(text: str, where: object) -> Any:
    """`yaml.safe_load` of a user's file, refusing aliases (`*name`): a few hundred bytes of
    aliases nested in aliases expand to gigabytes once anything walks the document."""
    import yaml  # lazy: PyYAML kept off the CLI start

    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            mark = event.start_mark
            line = f" line {mark.line + 1}" if mark is not None else ""
            raise ConfigError(f"{where}:{line} uses a YAML alias (*{event.anchor}); write the values out instead")
    return yaml.safe_load(text)
