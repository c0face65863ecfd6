"""Count `Any` in function signatures (parameters and returns) under the given packages.

    python scripts/count_any.py trinity/session trinity/runs trinity/submission trinity/analysis trinity/competition

"bare Any" is an annotation that is exactly `Any`; "holding Any" one that holds `Any` somewhere
(`dict[str, Any]`, `Any | None`); "implicit Any" a parameter or return with no annotation (self,
cls and `__init__`'s return aside) or a bare generic (`dict`, `list`, `Callable`, ...), which mypy
reads as Any. With `-v` every explicit hit is listed as file:line name.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def _mentions_any(node: ast.expr) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id == "Any") or (isinstance(n, ast.Attribute) and n.attr == "Any")
        for n in ast.walk(node)
    ) or (isinstance(node, ast.Constant) and isinstance(node.value, str) and "Any" in node.value)


def _is_bare(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == "Any") or (isinstance(node, ast.Constant) and node.value == "Any")


BARE_GENERICS = {"dict", "list", "tuple", "set", "frozenset", "Mapping", "Sequence", "Iterable", "Callable"}


def _implicit(node: ast.expr | None) -> bool:
    """No annotation, or a generic without its parameters."""
    if node is None:
        return True
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value in BARE_GENERICS
    parts = list(ast.walk(node))
    subscripted = {id(s.value) for s in parts if isinstance(s, ast.Subscript)}
    return any(isinstance(n, ast.Name) and n.id in BARE_GENERICS and id(n) not in subscripted for n in parts)


def scan(path: Path) -> tuple[list[tuple[str, int, str, bool]], int]:
    hits: list[tuple[str, int, str, bool]] = []
    implicit = 0
    tree = ast.parse(path.read_text(), str(path))
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        a = fn.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
        params += [p for p in (a.vararg, a.kwarg) if p is not None]
        for k, p in enumerate(params):
            if p.annotation is not None and _mentions_any(p.annotation):
                hits.append((str(path), p.lineno, f"{fn.name}({p.arg})", _is_bare(p.annotation)))
            elif not (k == 0 and p.arg in ("self", "cls")) and _implicit(p.annotation):
                implicit += 1
        if fn.returns is not None and _mentions_any(fn.returns):
            hits.append((str(path), fn.lineno, f"{fn.name} -> ", _is_bare(fn.returns)))
        elif fn.name != "__init__" and _implicit(fn.returns):
            implicit += 1
    return hits, implicit


def main(argv: list[str]) -> int:
    verbose = "-v" in argv
    roots = [a for a in argv if a != "-v"]
    total_bare = total_inside = total_implicit = 0
    for root in roots:
        hits: list[tuple[str, int, str, bool]] = []
        implicit = 0
        for f in sorted(Path(root).rglob("*.py")):
            h, n = scan(f)
            hits += h
            implicit += n
        bare = sum(1 for h in hits if h[3])
        print(f"{root:24s} bare Any {bare:4d}   holding Any {len(hits) - bare:4d}   implicit Any {implicit:4d}")
        total_bare += bare
        total_inside += len(hits) - bare
        total_implicit += implicit
        if verbose:
            for f, line, name, is_bare in hits:
                print(f"    {f}:{line} {name}{' (bare)' if is_bare else ''}")
    print(f"{'total':24s} bare Any {total_bare:4d}   holding Any {total_inside:4d}   implicit Any {total_implicit:4d}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
