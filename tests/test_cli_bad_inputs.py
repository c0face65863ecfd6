"""Bad input, one case each: a one-line error naming the input, a non-zero exit, nothing
written — no traceback, no run directory left "failed", no hang, no runaway memory. Through the
CLI's `main` in this process (the same code path as the console script)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from train_argv import train_argv

from trinity.benchmarks.practice import practice_questions
from trinity.cli import main

ROOT = Path(__file__).resolve().parents[1]
MATH = ROOT / "tests" / "fixtures" / "benchmarks" / "math500_test.jsonl"
DEEP = "[" * 100_000 + "]" * 100_000


def _questions(tmp: Path) -> Path:
    q = tmp / "q.jsonl"
    q.write_text("".join(json.dumps(x.to_json()) + "\n" for x in practice_questions() if x.kind == "math"))
    return q


def _live(tmp: Path, *extra: str) -> list[str]:
    pool = ("--pool", "local", "--base-url", "http://127.0.0.1:9/v1", "--pool-models", "m-a,m-b")
    return train_argv(tmp / "run", *pool, *extra, mode="live", questions=_questions(tmp), generations=1, popsize=2, m=2)


def _cached(tmp: Path, *extra: str, run_dir: str | None = None) -> list[str]:
    import sys

    from trinity.data.matrix import save_matrix
    from trinity.data.questions import save_questions

    sys.path.insert(0, str(ROOT / "tests" / "optim"))
    from optim_standin import synthetic_task

    qs, mat = synthetic_task(n_per_cat=4, seed=0)
    save_questions(tmp / "cq.jsonl", qs)
    save_matrix(tmp / "cm.json", mat)
    q, m = tmp / "cq.jsonl", tmp / "cm.json"
    return train_argv(run_dir or tmp / "run", *extra, questions=q, matrix=m, generations=1, popsize=2, m=2)


def _models_yaml(tmp: Path, **provider: str) -> list[str]:
    y = tmp / "models.yaml"
    extra = "".join(f"    {k}: {v}\n" for k, v in provider.items())
    y.write_text(
        "providers:\n  p:\n    base_url: http://127.0.0.1:9/v1\n    key_optional: true\n"
        f"{extra}    models: {{m-a: {{price_in: 1, price_out: 2}}}}\n"
    )
    return [
        *("collect", "--benchmark", "math500", "--data", str(MATH), "--n", "2", "--k", "1"),
        *("--pool", "p", "--models-yaml", str(y), "--out", str(tmp / "out" / "m.json")),
    ]


def _aliases(tmp: Path) -> list[str]:
    # a billion laughs: 9 aliases nested 9 deep under prices
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    c = tmp / "laughs.yaml"
    c.write_text("\n".join(lines) + "\nprices:\n  m-a: *a8\n")
    return ["train", "--config", str(c), "--run-dir", str(tmp / "run")]


def _ledger_dir(tmp: Path) -> list[str]:
    (tmp / "emptyrun").mkdir()
    return ["ledger", "verify", str(tmp / "emptyrun")]


def _grade_deep(tmp: Path) -> list[str]:
    c = tmp / "cases.jsonl"
    c.write_text(DEEP + "\n")
    return ["grade", str(c), "--out", str(tmp / "verdicts.jsonl")]


def _questions_deep(tmp: Path) -> list[str]:
    args = _cached(tmp)
    (tmp / "cq.jsonl").write_text(DEEP + "\n")
    return args


CASES = {
    "price inf": (lambda t: _live(t, "--price-in", "inf", "--price-out", "inf", "--budget-usd", "1"), "price"),
    "price 1e308": (lambda t: _live(t, "--price-in", "1e308", "--price-out", "1e308", "--budget-usd", "1"), "price"),
    "budget inf": (lambda t: _live(t, "--price-in", "1", "--price-out", "2", "--budget-usd", "inf"), "budget"),
    "seed 2**70": (lambda t: _cached(t, "--seed", "1180591620717411303424"), "seed"),
    "questions nested 100k": (_questions_deep, "nested too deeply"),
    "grade cases nested 100k": (_grade_deep, "nested too deeply"),
    "run dir in /proc": (lambda t: _cached(t, run_dir="/proc/x"), "/proc/x"),
    "ledger verify /dev/zero": (lambda t: ["ledger", "verify", "/dev/zero"], "not a regular file"),
    "max_concurrency eight": (lambda t: _models_yaml(t, max_concurrency='"eight"'), "max_concurrency"),
    "max_tokens lots": (lambda t: _models_yaml(t, decoding='{max_tokens: "lots"}'), "max_tokens"),
    "max_tokens -5": (lambda t: _models_yaml(t, decoding="{max_tokens: -5}"), "max_tokens"),
    "ledger verify dir without ledger": (_ledger_dir, "no ledger.jsonl"),
    "yaml aliases 9x9 under prices": (_aliases, "alias"),
}


def _tree(p: Path) -> dict[str, str]:
    return {
        str(f.relative_to(p)): hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(p.rglob("*")) if f.is_file()
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line_and_writes_nothing(case, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    build, needle = CASES[case]
    args = build(tmp_path)
    before = _tree(tmp_path)
    capsys.readouterr()
    rc = main(args)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert rc != 0, (rc, out[-500:], err[-1500:])
    assert len(lines) == 1 and lines[0].startswith("error: "), err[-1500:]
    assert needle in lines[0], lines[0]
    assert "Traceback" not in err
    assert _tree(tmp_path) == before  # nothing written: no run dir, no output, no cache
    assert not (tmp_path / "run").exists()
