"""`pack_run` / `trinity pack`: bundle layout, receipt contents, numbering and refusals."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest
from submission_helpers import MODELS, SHORT, isolated_env, make_run  # noqa: F401 (autouse fixture)

from trinity.cli import main
from trinity.errors import InputError
from trinity.pool.ledger import verify_ledger
from trinity.submission.history import SubmissionHistory
from trinity.submission.ledger_export import verify_mpc_chain
from trinity.submission.pack import pack_run


def test_tinyrouter_bundle_layout_and_receipt(tmp_path):
    run = make_run(tmp_path / "runs" / "r1", generations=4, paid_calls=5)
    b = pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "repo")
    assert b.path == (tmp_path / "repo" / "submissions" / "alice" / "1").resolve()
    assert sorted(b.files) == ["README.md", "head_weights.npy", "receipt.json", "svf_scales.npy"]

    head = np.load(b.path / "head_weights.npy")
    svf = np.load(b.path / "svf_scales.npy")
    assert head.shape == (6, 1024) and head.dtype == np.float32
    assert svf.shape == (7168,) and svf.dtype == np.float32
    theta = np.load(run.best_theta)
    assert head.size + svf.size == 13_312 == theta.size
    np.testing.assert_array_equal(head.ravel(), theta[:6144].astype(np.float32))
    np.testing.assert_array_equal(svf, theta[6144:].astype(np.float32))

    r = json.loads((b.path / "receipt.json").read_text())
    led = verify_ledger(run.ledger)
    assert r["total_cost_usd"] == pytest.approx(led.total_usd) and r["total_cost_usd"] > 0
    assert r["total_cost_micro_usd"] == led.total_micro_usd
    assert r["ledger_head_hash"] == led.head_hash and r["ledger_records"] == 5
    # TinyRouter's receipts name the pool by constants.py's short names; our ids are kept beside
    assert r["pool_models"] == SHORT and r["pool_model_ids"] == MODELS and r["n_total"] == 13_312
    assert r["competition"] == "tinyrouter"
    # the ledger exported in TinyRouter's {"m","p","c"} chain, next to our ledger in the run
    exp = r["ledger_export"]
    assert exp["records"] == 5 and exp["file"] == "cost_ledger.tinyrouter.jsonl"
    assert verify_mpc_chain(run.path / exp["file"]) == (True, 5, "")
    assert abs(exp["total_usd_at_competition_prices"] - r["total_cost_usd"]) < 0.05
    assert (r["popsize"], r["m_cma"], r["seed"], r["generations"]) == (32, 16, 0, 4)
    assert r["benchmark"] == "composite"
    assert r["best_fitness"] == pytest.approx(0.54)
    assert r["fitness_history"][0] == {
        "generation": 1,
        "mean_fitness": pytest.approx(0.41),
        "max_fitness": pytest.approx(0.51),
        "best_fitness": pytest.approx(0.51),
    }
    assert r["packed_at"].startswith("20") and r["run_id"] == "r1" and r["miner"] == "alice"
    readme = (b.path / "README.md").read_text()
    assert "r1" in readme and "13,312" in readme and led.head_hash in readme

    # the pack is recorded so `check` can find the run again
    rec = SubmissionHistory.open().pack_record(b.hash)
    assert rec["run_dir"] == str(run.path.resolve()) and rec["miner"] == "alice"


def test_tinyrouter_numbers_are_next_free(tmp_path):
    run = make_run(tmp_path / "r")
    out = tmp_path / "repo"
    (out / "submissions" / "alice" / "7").mkdir(parents=True)
    (out / "submissions" / "alice" / "notes").mkdir()
    assert pack_run(run.path, "alice", "tinyrouter", out=out).path.name == "8"
    assert pack_run(run.path, "alice", "tinyrouter", out=out).path.name == "9"
    assert not [p for p in (out / "submissions").iterdir() if p.name.startswith(".pack-")]


def test_minirouter_bundle_copies_run_artifacts(tmp_path):
    run = make_run(tmp_path / "r", eval_json=True)
    out = tmp_path / "repo"
    b = pack_run(run.path, "alice", "minirouter", out=out)
    assert b.path == (out / "submissions" / "final_model").resolve()
    assert sorted(b.files) == ["best_theta.npy", "eval.json", "history.json", "summary.json"]
    assert (b.path / "best_theta.npy").read_bytes() == run.best_theta.read_bytes()
    # a re-pack of the same run replaces the bundle as a whole (a stale eval.json does not survive)
    run.eval_json.unlink()
    b1 = pack_run(run.path, "alice", "minirouter", out=out)
    assert sorted(b1.files) == ["best_theta.npy", "history.json", "summary.json"]
    # another run's bundle that only exists on disk is never overwritten ...
    run2 = make_run(tmp_path / "r2", seed=1)
    with pytest.raises(InputError, match="holds another bundle \\(run r\\) that git does not have"):
        pack_run(run2.path, "alice", "minirouter", out=out)
    assert (b.path / "best_theta.npy").read_bytes() == run.best_theta.read_bytes()
    # ... but once git holds it (the checkout's current model), packing over it is safe
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    for cmd in (["init", "-q"], ["add", "submissions"], ["commit", "-qm", "king"]):
        subprocess.run(["git", "-C", str(out), *cmd], check=True, env=env)
    b2 = pack_run(run2.path, "alice", "minirouter", out=out)
    assert (b2.path / "best_theta.npy").read_bytes() == run2.best_theta.read_bytes()
    assert any(n.startswith("replaces submissions/final_model/ (run r: 3 tracked file(s))") for n in b2.notes or [])


def test_minirouter_pack_says_what_it_replaces_and_refuses_to_delete_tracked_files(tmp_path, capsys):
    """The competition's checkout tracks submissions/final_model/ with a README.md: a pack would
    delete it. Refused (one line naming it) unless --force; then the note says what went."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    out = tmp_path / "repo"
    final = out / "submissions" / "final_model"
    final.mkdir(parents=True)
    (final / "README.md").write_text("# the king\n")
    (final / "summary.json").write_text(json.dumps({"run_id": "king-run"}))
    for cmd in (["init", "-q"], ["add", "submissions"], ["commit", "-qm", "king"]):
        subprocess.run(["git", "-C", str(out), *cmd], check=True, env=env)
    run = make_run(tmp_path / "r")
    rc = main(["pack", str(run.path), "--miner", "alice", "--format", "minirouter", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "would delete README.md" in err and "--force" in err and "king-run" in err
    assert (final / "README.md").exists()  # nothing lost
    rc = main(["pack", str(run.path), "--miner", "alice", "--format", "minirouter", "--out", str(out), "--force"])
    assert rc == 0 and not (final / "README.md").exists()
    assert "replaces submissions/final_model/ (run king-run: 2 tracked file(s), deleting README.md)" in (
        capsys.readouterr().out
    )


def test_unfinished_run_is_refused_unless_forced(tmp_path):
    run = make_run(tmp_path / "r", status="running")
    with pytest.raises(InputError, match="not finished.*--force"):
        pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "repo")
    assert pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "repo", force=True).path.name == "1"


def test_run_without_best_theta_is_refused_even_forced(tmp_path):
    run = make_run(tmp_path / "r", status="running")
    run.best_theta.unlink()
    with pytest.raises(InputError, match="no best_theta.npy"):
        pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "repo", force=True)


def test_broken_ledger_is_refused_even_forced(tmp_path):
    run = make_run(tmp_path / "r", paid_calls=3)
    lines = run.ledger.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace('"completion_tokens":300000', '"completion_tokens":1')
    run.ledger.write_text("".join(lines))
    for force in (False, True):
        with pytest.raises(InputError, match="ledger .* does not verify at line 2"):
            pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "repo", force=force)
    assert not (tmp_path / "repo" / "submissions" / "alice").exists()


def test_cached_run_without_ledger_is_refused_for_tinyrouter_and_packs_for_minirouter(tmp_path):
    run = make_run(tmp_path / "r", paid_calls=0)
    with pytest.raises(InputError, match="receipt_cost_zero_or_missing"):
        pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "repo")
    b = pack_run(run.path, "alice", "minirouter", out=tmp_path / "repo")  # MiniRouter has no receipt
    s = json.loads((b.path / "summary.json").read_text())
    assert (s["benchmark"], s["n_total"], s["competition"]) == ("composite", 13_312, "minirouter")


def test_theta_that_does_not_fit_the_pool_is_refused(tmp_path):
    run = make_run(tmp_path / "r", theta=np.ones(13_313))
    with pytest.raises(InputError, match="does not fit a 3-model pool"):
        pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "repo")


def test_cli_pack_and_its_errors(tmp_path, capsys):
    run = make_run(tmp_path / "r")
    assert (
        main(["pack", str(run.path), "--miner", "alice", "--format", "tinyrouter", "--out", str(tmp_path / "repo")])
        == 0
    )
    assert "submissions/alice/1" in capsys.readouterr().out
    assert main(["pack", str(tmp_path / "nope"), "--miner", "alice", "--format", "tinyrouter"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "not a run directory" in err and len(err.strip().splitlines()) == 1
    assert (
        main(["pack", str(run.path), "--miner", "bad name!", "--format", "minirouter", "--out", str(tmp_path / "repo")])
        == 2
    )
    assert "miner name" in capsys.readouterr().err


def test_bundle_files_get_ordinary_modes_and_hidden_dirs_are_not_priors(tmp_path):
    import os
    import shutil

    from trinity.submission.bundle import find_bundles

    run = make_run(tmp_path / "r")
    b = pack_run(run.path, "alice", "tinyrouter", out=tmp_path / "repo")
    mask = os.umask(0)
    os.umask(mask)
    assert (b.path.stat().st_mode & 0o777) == 0o777 & ~mask
    assert all((p.stat().st_mode & 0o777) == 0o666 & ~mask for p in b.path.iterdir())
    shutil.copytree(b.path, tmp_path / "repo" / "submissions" / ".pack-tmp")
    assert find_bundles(tmp_path / "repo" / "submissions") == [b.path]
