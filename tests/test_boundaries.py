"""Contracts between the parts (docs/CONTRACTS.md, docs/ARCHITECTURE.md: Layers)."""

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


def test_no_module_imports_another_modules_private_names():
    """A private name (`_x`: a function, class or module) is imported only inside its own package
    (`from trinity.grading import _harness` in trinity/grading/); across packages, public names."""
    offenders = []
    for path in [*(ROOT / "trinity").rglob("*.py"), *(ROOT / "minertui").rglob("*.py")]:
        here = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        package = here if path.name == "__init__.py" else here.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            if node.module.split(".")[0] not in ("trinity", "minertui") or node.module == package:
                continue
            names = node.module.split(".") + [a.name for a in node.names]
            if any(n.startswith("_") and not n.startswith("__") for n in names):
                offenders.append(
                    f"{here}:{node.lineno}: from {node.module} import {', '.join(a.name for a in node.names)}"
                )
    assert not offenders, "import public names only:\n" + "\n".join(offenders)


def test_import_contract_is_kept():
    """The layers and no-cycle contracts of pyproject.toml ([tool.importlinter]), lazy imports
    included. CI also runs `lint-imports`; this keeps a plain `pytest` run honest."""
    import shutil

    import pytest

    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    out = subprocess.run(
        [exe, "--no-cache"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_the_engine_does_not_start_the_app_benchmark(capsys):
    """The app benchmarks itself (`minertui bench`); `trinity bench app` only says so."""
    from minertui.__main__ import build_parser
    from trinity.cli import main

    assert main(["bench", "app"]) == 2
    assert "minertui bench" in capsys.readouterr().err
    args = build_parser().parse_args(["bench", "--json", "--keep", "/tmp/x"])
    assert (args.command, args.json, args.keep) == ("bench", True, "/tmp/x")
    src = (ROOT / "trinity" / "perf" / "app.py").read_text(encoding="utf-8")
    assert "minertui.bench" not in src and "subprocess" not in src


def test_the_pool_loads_without_graders_datasets_or_the_simulator():
    """Every module of trinity.pool (the money path) imports; none of benchmarks, grading, data,
    model or practice comes with it (the contract in pyproject.toml says so of the source)."""
    code = (
        "import pkgutil, importlib, sys, trinity.pool as p\n"
        "for m in pkgutil.iter_modules(p.__path__): importlib.import_module('trinity.pool.' + m.name)\n"
        "bad = ('trinity.benchmarks', 'trinity.grading', 'trinity.data', 'trinity.model', 'trinity.practice')\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith(bad))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "", f"trinity.pool pulled in: {out.stdout.strip()}"
