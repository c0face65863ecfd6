"""`pack` and `check` verify a run's ledger as `trinity ledger verify RUN_DIR` does: against the
heads the run recorded (summary.json's `ledger_head` / `ledger_records`), so a ledger cut at the
end, torn, or re-chained with halved costs is refused by `pack` and fails `check`'s ledger gate."""

from __future__ import annotations

import json

import pytest
from submission_helpers import isolated_env, make_run  # noqa: F401 (autouse fixture)

from trinity.cli import main
from trinity.errors import InputError
from trinity.pool.ledger import GENESIS, record_hash, verify_ledger
from trinity.submission.gates import check_bundle
from trinity.submission.pack import pack_run


def _anchored_run(tmp_path, n=8):
    run = make_run(tmp_path / "runs" / "r1", paid_calls=n)
    rep = verify_ledger(run.ledger)
    summary = json.loads(run.summary.read_text())
    summary.update(ledger_head=rep.head_hash, ledger_records=rep.n_records)
    run.summary.write_text(json.dumps(summary))
    return run


def _cut(path):
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-3]))


def _torn(path):
    data = path.read_bytes()
    path.write_bytes(data + data.splitlines(keepends=True)[-1][:40])


def _rechained(path):
    prev, out = GENESIS, []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        rec.pop("h")
        rec["cost_micro_usd"] //= 2
        rec["prev_h"] = prev
        rec["h"] = prev = record_hash(rec)
        out.append(json.dumps(rec, separators=(",", ":")) + "\n")
    path.write_text("".join(out))


TAMPER = {"cut": _cut, "torn": _torn, "rechained": _rechained}


@pytest.mark.parametrize("how", sorted(TAMPER))
def test_pack_refuses_a_tampered_ledger(tmp_path, capsys, how):
    run = _anchored_run(tmp_path)
    TAMPER[how](run.ledger)
    with pytest.raises(InputError, match="does not verify"):
        pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "repo", force=True)
    rc = main(["pack", str(run.path), "--miner", "alice", "--out", str(tmp_path / "repo2")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0 and len(err) == 1 and "does not verify" in err[0]
    assert not (tmp_path / "repo2" / "submissions").exists()


@pytest.mark.parametrize("how", sorted(TAMPER))
def test_check_fails_the_ledger_gate_of_a_tampered_ledger(tmp_path, how):
    run = _anchored_run(tmp_path)
    b = pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "repo")
    gate = {r.name: r for r in check_bundle(b.path).results}["ledger"]
    assert gate.status == "pass"
    TAMPER[how](run.ledger)
    gate = {r.name: r for r in check_bundle(b.path).results}["ledger"]
    assert gate.status == "fail" and "does not verify" in gate.reason, gate.reason


def test_a_deleted_ledger_of_a_paid_run_is_refused(tmp_path):
    run = _anchored_run(tmp_path)
    run.ledger.unlink()
    with pytest.raises(InputError, match="missing"):
        pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "repo", force=True)
