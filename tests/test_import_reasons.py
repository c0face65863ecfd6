"""Imports sit at the top of the module unless a reason is written beside them (docs/perf/imports.md).

A first-party import (`trinity`, `minertui`, or relative) inside a function or method needs a
comment that says why it is there: on the import's own line(s), or on the comment line(s) right
above it, or right above the first import of a block of imports written one after another (no
blank line between them) in the same body, e.g.

    from trinity.config import PRACTICE  # lazy: pydantic + PyYAML loaded only when used

    # lazy: the engine, Ray and the pool stay off the app's first frame
    from trinity.optim.engine import resume_run, start_run
    from trinity.sweep.budget import SharedBudget

A tool pragma alone (`# noqa: …`, `# type: ignore`, `# pragma: …`, `# fmt: …`) is not a reason.
Module-level imports (`if TYPE_CHECKING:` blocks and `try/except ImportError` included) are free.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = ("trinity", "minertui")
PRAGMA = re.compile(r"^#\s*(noqa\b|type:\s*ignore\b|pragma:|fmt:|isort:)", re.I)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
IMPORTS = (ast.Import, ast.ImportFrom)


def _first_party(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] in FIRST_PARTY for a in node.names)
    return node.level > 0 or (node.module or "").split(".")[0] in FIRST_PARTY


def _reason_lines(source: str) -> tuple[set[int], set[int]]:
    """(lines holding a comment that is a reason, lines holding nothing but such a comment)."""
    any_comment: set[int] = set()
    alone: set[int] = set()
    lines = source.splitlines()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type != tokenize.COMMENT or PRAGMA.match(tok.string) or not tok.string.lstrip("#").strip():
            continue
        row = tok.start[0]
        any_comment.add(row)
        if lines[row - 1].lstrip().startswith("#"):
            alone.add(row)
    return any_comment, alone


def _bodies(tree: ast.AST):
    """Every statement list in the tree, with whether it lies inside a function."""

    def visit(node: ast.AST, in_function: bool):
        for _, value in ast.iter_fields(node):
            items = value if isinstance(value, list) else [value]
            stmts = [v for v in items if isinstance(v, ast.stmt)]
            if stmts and len(stmts) == len(items):
                yield stmts, in_function
            for v in items:
                if isinstance(v, ast.AST):
                    yield from visit(v, in_function or isinstance(v, FUNCTIONS))

    yield from visit(tree, False)


def unexplained(path: Path) -> list[str]:
    """`path:line: import …` for each function-level first-party import without a reason."""
    source = path.read_text(encoding="utf-8")
    comments, alone = _reason_lines(source)
    lines = source.splitlines()
    out: list[tuple[int, str]] = []
    for body, in_function in _bodies(ast.parse(source)):
        if not in_function:
            continue
        block_start = None  # first line of the block of back-to-back imports this one belongs to
        prev: ast.stmt | None = None
        for st in body:
            if not isinstance(st, IMPORTS):
                prev = block_start = None
                continue
            if prev is None or st.lineno != (prev.end_lineno or prev.lineno) + 1:
                block_start = st.lineno
            prev = st
            if not _first_party(st):
                continue
            own = any(r in comments for r in range(st.lineno, (st.end_lineno or st.lineno) + 1))
            if own or st.lineno - 1 in alone or (block_start is not None and block_start - 1 in alone):
                continue
            rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            out.append((st.lineno, f"{rel}:{st.lineno}: {lines[st.lineno - 1].strip()}"))
    return [o for _, o in sorted(out)]


def test_every_function_level_first_party_import_says_why():
    offenders = [o for pkg in FIRST_PARTY for p in sorted((ROOT / pkg).rglob("*.py")) for o in unexplained(p)]
    assert not offenders, (
        "a first-party import inside a function needs its reason beside it (`# lazy: …`, `# cycle: …`), "
        "or it moves to the top of the module:\n" + "\n".join(offenders)
    )


def test_the_check_finds_an_unexplained_import_and_accepts_the_conventions(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        "from trinity.io import read_jsonl\n"
        "\n"
        "\n"
        "def f():\n"
        "    from trinity.config import PRACTICE  # lazy: pydantic kept off the CLI start\n"
        "\n"
        "    # lazy: the engine stays off the first frame\n"
        "    from trinity.optim.engine import start_run\n"
        "    from trinity.sweep.budget import SharedBudget\n"
        "\n"
        "    import json\n"
        "    from trinity.errors import InputError\n"
        "    from minertui.calls import (\n"
        "        load_calls,\n"
        "    )  # noqa: F401\n"
        "    if True:\n"
        "        from .sibling import x\n"
        "    #\n"
        "    from trinity.model import ROLES\n",
        encoding="utf-8",
    )
    found = [line.split(": ", 1)[1] for line in unexplained(src)]
    assert found == [
        "from trinity.errors import InputError",
        "from minertui.calls import (",
        "from .sibling import x",
        "from trinity.model import ROLES",
    ]
