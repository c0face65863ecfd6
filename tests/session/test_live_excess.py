"""A live run's summary.json records what the provider billed above the reserved worst case
(issue 12): `excess_billed_usd` / `excess_calls`, summed from the ledger records that carry it,
equal to what `trinity ledger report` lists for the provider and model. Real loopback HTTP against
the hostile stand-in, the engine as a child `trinity` process."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from train_argv import train_argv

from trinity.benchmarks.practice import practice_questions
from trinity.pool.ledger import verify_ledger

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pool"))
from hostile import HostileServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def hostile():
    h = HostileServer()
    yield h
    h.stop()


def test_summary_records_the_excess_billed(hostile, tmp_path):
    q = tmp_path / "q.jsonl"
    q.write_text("".join(json.dumps(x.to_json()) + "\n" for x in practice_questions() if x.kind == "math"))
    # every call reports a cost above its worst case at the stated prices (a stale price table),
    # but well inside the sane multiple: billed as reported, the excess kept
    hostile.mode, hostile.usage = "usage", {"prompt_tokens": 50, "completion_tokens": 50, "cost": 0.05}
    run = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "trinity",
            *train_argv(
                run,
                "--pool",
                "local",
                "--base-url",
                hostile.base_url,
                "--pool-models",
                "m-a,m-b",
                "--price-in",
                "1",
                "--price-out",
                "2",
                "--budget-usd",
                "5",
                mode="live",
                questions=q,
                generations=1,
                popsize=2,
                m=2,
            ),  # fmt: skip
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]
    summary = json.loads((run / "summary.json").read_text())
    rep = verify_ledger(run / "ledger.jsonl")
    assert rep.ok and rep.excess_calls > 0
    print(
        f"FIGURE calls={rep.n_records} excess_calls={rep.excess_calls} excess=${rep.excess_usd:.6f} "
        f"total=${rep.total_usd:.6f}",
        file=sys.stderr,
    )
    assert summary["excess_calls"] == rep.excess_calls
    assert summary["excess_billed_usd"] == pytest.approx(rep.excess_usd, abs=1e-9) and summary["excess_billed_usd"] > 0
    assert set(rep.excess) <= {"local m-a", "local m-b"}
