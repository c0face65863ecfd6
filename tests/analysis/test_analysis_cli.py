"""`trinity oracle / baselines` end to end: output, JSON, PNG, and one-line errors with exit codes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trinity.cli import main

ROOT = Path(__file__).resolve().parents[2]


def write_matrix(path: Path, tasks: list[dict], k: int = 2) -> Path:
    path.write_text(json.dumps({"benchmark": "toy", "k": k, "tasks": tasks}))
    return path


def specialists(n: int = 30) -> list[dict]:
    # first half: only model a; second half: only model b (every sample)
    return [
        {
            "id": f"q{i}",
            "answer": "1",
            "per_model": {
                "a": [1, 1, 1, 1] if i < n // 2 else [0, 0, 0, 0],
                "b": [0, 0, 0, 0] if i < n // 2 else [1, 1, 1, 1],
            },
        }
        for i in range(n)
    ]


def run(argv, capsys):
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_oracle_json_and_plot(tmp_path, capsys):
    m = write_matrix(tmp_path / "m.json", specialists(), k=4)
    png = tmp_path / "oracle.png"
    rc, out, err = run(["oracle", str(m), "--json", "--seed", "3", "--bootstrap", "300", "--plot", str(png)], capsys)
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["verdict"] == "ROUTER_BOUND" and rep["crossfit"]["headroom"] == 0.5
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_oracle_table_names_the_verdict(tmp_path, capsys):
    m = write_matrix(tmp_path / "m.json", specialists(), k=4)
    rc, out, _ = run(["oracle", str(m), "--bootstrap", "200", "--splits", "20"], capsys)
    assert rc == 0
    assert "ROUTER_BOUND" in out and "BIASED UPWARD" in out and "cross-fit oracle" in out


def test_oracle_on_ragged_samples_truncates_and_says_so(tmp_path, capsys):
    tasks = specialists(10)
    tasks[3]["per_model"]["a"] = [1, 1]  # fewer samples in one cell
    m = write_matrix(tmp_path / "m.json", tasks, k=4)
    rc, out, err = run(["oracle", str(m), "--json", "--bootstrap", "100", "--splits", "10"], capsys)
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["k"] == 2 and any("ragged" in n for n in rep["notes"])


def test_oracle_with_one_sample_reports_what_it_can(tmp_path, capsys):
    tasks = [{"id": f"q{i}", "per_model": {"a": [i % 2], "b": [1 - i % 2]}} for i in range(6)]
    m = write_matrix(tmp_path / "m.json", tasks, k=1)
    rc, out, err = run(["oracle", str(m), "--json"], capsys)
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["crossfit"] is None and rep["verdict"] == "INCONCLUSIVE" and rep["naive_oracle"] == 1.0
    rc, out, _ = run(["oracle", str(m)], capsys)
    assert rc == 0 and "impossible" in out


@pytest.mark.parametrize(
    "tasks, match",
    [
        ([{"id": "q0", "per_model": {"a": [1, float("nan")], "b": [0, 1]}}], "entries must be 0 or 1"),
        ([{"id": "q0", "per_model": {"a": [1, 2], "b": [0, 1]}}], "entries must be 0 or 1"),
        ([{"id": "q0", "per_model": {"a": [1, 0]}}, {"id": "q1", "per_model": {"b": [1, 0]}}], "missing"),
        ([], "no tasks"),
    ],
)
def test_oracle_bad_matrices_exit_2_with_one_line(tmp_path, capsys, tasks, match):
    m = tmp_path / "bad.json"
    m.write_text(json.dumps({"benchmark": "toy", "tasks": tasks}))
    rc, out, err = run(["oracle", str(m)], capsys)
    assert rc == 2 and out == ""
    assert err.startswith("error: ") and match in err and err.count("\n") == 1


def test_oracle_missing_file_and_bad_flags(tmp_path, capsys):
    rc, _, err = run(["oracle", str(tmp_path / "none.json")], capsys)
    assert rc == 2 and "not found" in err
    m = write_matrix(tmp_path / "m.json", specialists(4), k=4)
    rc, _, err = run(["oracle", str(m), "--splits", "0"], capsys)
    assert rc == 2 and "--splits" in err
    rc, _, err = run(["oracle", str(m), "--plot", str(tmp_path / "x.jpg")], capsys)
    assert rc == 2 and "PNG" in err
    rc, _, err = run(["oracle", str(m), "--run", str(tmp_path)], capsys)
    assert rc == 2 and "not a run directory" in err


def test_baselines_cached_on_practice(tmp_path, capsys):
    png = tmp_path / "b.png"
    rc, out, err = run(["baselines", "--matrix", "practice", "--split", "test", "--json", "--plot", str(png)], capsys)
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["n_questions"] == 12 and rep["random_seeds"] == 100 and len(rep["always"]) == 3
    assert png.exists()


def test_baselines_flag_errors(tmp_path, capsys):
    rc, _, err = run(["baselines"], capsys)
    assert rc == 2 and "exactly one of --matrix" in err
    rc, _, err = run(["baselines", "--matrix", "practice", "--seeds", "0"], capsys)
    assert rc == 2 and "--seeds" in err
    rc, _, err = run(["baselines", "--matrix", "practice", "--benchmark", "mmlu"], capsys)
    assert rc == 2 and "mmlu" in err
    rc, _, err = run(["baselines", "--pool", "practice"], capsys)
    assert rc == 2 and "--questions" in err


def test_eval_and_score_refuse_a_non_run(tmp_path, capsys):
    for cmd in (["eval", str(tmp_path)], ["score", str(tmp_path)]):
        rc, _, err = run(cmd, capsys)
        assert rc == 2 and "not a run directory" in err


def test_cli_subprocess_error_line():
    out = subprocess.run(
        [sys.executable, "-m", "trinity", "oracle", "/nonexistent/m.json"], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 2 and out.stderr.startswith("error: ") and "Traceback" not in out.stderr


def test_oracle_one_model_and_one_question_via_the_cli(tmp_path, capsys):
    one_model = write_matrix(
        tmp_path / "one_model.json", [{"id": f"q{i}", "per_model": {"a": [i % 2, 1, 0, 1]}} for i in range(8)], k=4
    )
    rc, out, err = run(["oracle", str(one_model), "--json", "--bootstrap", "100", "--splits", "10"], capsys)
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["verdict"] == "POOL_BOUND" and rep["crossfit"]["headroom"] == 0.0
    assert any("one model" in n for n in rep["notes"])
    one_q = write_matrix(tmp_path / "one_q.json", [{"id": "q0", "per_model": {"a": [1, 0], "b": [0, 1]}}])
    rc, out, err = run(["oracle", str(one_q)], capsys)
    assert rc == 0, err
    assert "INCONCLUSIVE" in out and "one question" in out
