"""Contracts between the parts (DESIGN §2)."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_engine_never_imports_the_ui():
    offenders = []
    for path in (ROOT / "trinity").rglob("*.py"):
        bad = _imports(path) & {"textual", "textual_plotext", "minertui"}
        if bad:
            offenders.append(f"{path.relative_to(ROOT)}: {sorted(bad)}")
    assert not offenders, "the engine must not import the UI:\n" + "\n".join(offenders)


def test_cli_starts_without_heavy_imports():
    code = (
        "import sys; import trinity.cli as c; c.build_parser();"
        "heavy = [m for m in ('torch', 'transformers', 'datasets', 'textual') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "", f"trinity CLI start-up imported heavy modules: {out.stdout.strip()}"
