"""`trinity m1`: training on cached features, resume, eval against baselines, pack → check →
score, the attentive variant, and an M1 run as an ordinary row of the app's Runs mode."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trinity.cli import main
from trinity.competition import m1
from trinity.errors import InputError
from trinity.m1.run import TrainConfig, create_run, run_training
from trinity.runs.rundir import RunDir

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks" / "tinyrouter_m1"
TRAIN5, TEST5 = str(FIX / "5-domain" / "train.jsonl"), str(FIX / "5-domain" / "test.jsonl")


def _cfg(**kw) -> TrainConfig:
    base = dict(encoder="tiny-qwen3", train_data=TRAIN5, test_data=TEST5, limit=60, epochs=4, iters=3, patience=10)
    base.update(kw)
    return TrainConfig(**base)


@pytest.mark.slow
def test_train_writes_an_ordinary_run_and_resume_is_exact(tmp_path):
    a = create_run(_cfg(), tmp_path, tmp_path / "a")
    sa = run_training(a)
    assert sa.status == "finished" and sa.epochs == 4 and not sa.features_cached
    meta = a.read_meta()
    assert meta["mode"] == "m1" and meta["status"] == "finished" and meta["config"]["generations"] == 4
    gens = [e for e in a.read_events() if e["type"] == "generation"]
    assert [e["gen"] for e in gens] == [1, 2, 3, 4]
    assert {"loss", "train_domain_acc", "val_domain_acc", "val_difficulty_exact", "val_acc"} <= set(gens[0])
    assert any("epoch 2: loss" in e.get("message", "") for e in a.read_events())
    hist = json.loads(a.history.read_text())
    assert len(hist) == 4 and hist[-1]["loss"] <= hist[0]["loss"]

    b = create_run(_cfg(), tmp_path, tmp_path / "b")
    sb = run_training(b, stop_after=2)
    assert sb.status == "stopped" and b.read_meta()["status"] == "stopped"
    sb = run_training(b, resume=True)
    assert sb.epochs == 4 and sb.best_val_composite == sa.best_val_composite
    with np.load(a.path / "head.npz") as ha, np.load(b.path / "head.npz") as hb:
        for k in ha.files:
            assert np.array_equal(ha[k], hb[k])
    assert json.loads(b.history.read_text()) == hist


def test_features_are_cached(tmp_path):
    from trinity.m1.features import features
    from trinity.model.encoder import load_encoder

    enc = load_encoder("tiny-qwen3", "cpu")
    prompts = ["What is 2+2?", "Write a haiku.", "Fix my Python loop."]
    f1 = features(enc, 0, prompts, "penultimate", tmp_path)
    f2 = features(enc, 0, prompts, "penultimate", tmp_path)
    assert not f1.cached and f2.cached and np.array_equal(f1.X, f2.X)
    assert f1.X.shape == (3, 64) and np.allclose(np.linalg.norm(f1.X, axis=1), 1.0, atol=1e-5)
    s = features(enc, 0, prompts, "attentive", tmp_path)
    assert len(s.seqs) == 3 and all(h.shape[1] == 64 for h in s.seqs)
    # attentive states exclude the EOS: the last one is the penultimate position, before normalising
    assert np.allclose(s.seqs[0][-1] / np.linalg.norm(s.seqs[0][-1]), f1.X[0], atol=1e-5)
    assert len(list(tmp_path.iterdir())) == 2


@pytest.mark.slow
def test_fixture_task_head_beats_majority_and_knn(tmp_path, capsys):
    run = tmp_path / "r"
    rc = main(["m1", "train", "--encoder", "tiny-qwen3", "--train-data", TRAIN5, "--test-data", TEST5,
               "--run-dir", str(run), "--l2", "1e-5"])  # fmt: skip
    assert rc == 0
    assert main(["m1", "eval", str(run), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    s = rep["systems"]
    assert s["head"]["composite"] >= s["majority"]["composite"] + 0.3
    assert s["head"]["composite"] >= s["knn"]["composite"]
    assert s["head"]["ci"]["composite"]["lo"] <= s["head"]["composite"] <= s["head"]["ci"]["composite"]["hi"]
    assert sum(map(sum, rep["confusion"]["rows_true_cols_pred"])) == rep["n_test"] == 120


def test_pack_check_score_and_rate_limit(tmp_path, capsys):
    rd = create_run(_cfg(epochs=3, iters=15, l2=1e-5), tmp_path, tmp_path / "run")
    run_training(rd)
    root = tmp_path / "clone"
    assert main(["m1", "pack", str(rd.path), "--miner", "alice", "--root", str(root)]) == 0
    pack_dir = m1.submission_dir(root, "alice")
    assert sorted(p.name for p in pack_dir.iterdir()) == ["W_diff.npy", "W_domain.npy", "config.json"]
    assert main(["m1", "check", str(pack_dir), "--miner", "alice"]) == 0
    assert "[PASS] rate_limit" in capsys.readouterr().out
    m1.append_attempt(root, "alice", str(pack_dir), ok=True)
    assert main(["m1", "check", str(pack_dir), "--miner", "alice"]) == 1
    assert "[FAIL] rate_limit" in capsys.readouterr().out
    # the same head as king: no gain, REJECT (exit 1); a zero king (uniform): MERGE
    assert main(["m1", "score", str(rd.path), "--king", str(pack_dir), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["merge"] is False and out["p_clears_margin"] == 0.0
    zero = m1.M1Pack("5-domain", "penultimate", 64, np.zeros((5, 64)), np.zeros((5, 64)))
    zero.save(tmp_path / "zero")
    assert main(["m1", "score", str(rd.path), "--king", str(tmp_path / "zero"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["merge"] is True and out["challenger"]["composite"] >= out["king"]["composite"] + 0.02


def test_attentive_variant_trains_and_packs(tmp_path):
    rd = create_run(_cfg(pool="attentive", epochs=2, iters=15, l2=1e-5), tmp_path, tmp_path / "att")
    s = run_training(rd)
    assert s.n_params == 5 * 64 + 5 * 64 + 64
    from trinity.m1.run import pack_of_run

    pack = pack_of_run(rd, "bob")
    assert pack.attention_query is not None and pack.attention_query.shape == (64,) and pack.problems() == []
    assert np.any(pack.attention_query != 0)  # the query was learned


def test_bad_inputs_are_one_line(tmp_path, capsys):
    assert main(["m1", "eval", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1", "domain": "poetry", "difficulty": 1, "prompt": "x"}\n')
    assert (
        main(["m1", "train", "--encoder", "tiny-qwen3", "--train-data", str(bad), "--run-dir", str(tmp_path / "r")])
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "domain 'poetry'" in err and not (tmp_path / "r").exists()
    assert main(["m1", "check", str(tmp_path / "nope"), "--miner", "a"]) == 2
    assert "not found" in capsys.readouterr().err


def test_an_m1_run_is_an_ordinary_row_in_runs(tmp_path):
    from minertui.runmodel import RunModel
    from minertui.screens.runs import run_row, run_values

    rd = create_run(_cfg(epochs=3), tmp_path, tmp_path / "m1run")
    run_training(rd)
    model = RunModel(rd.path)
    model.poll()
    snap = model.snapshot()
    vals, row = run_values(snap), run_row(snap)
    assert vals[1] == "finished" and vals[2] == 3 and vals[7] == "m1"
    assert row[2] == "3/3" and vals[3] == pytest.approx(
        json.loads(RunDir(rd.path).summary.read_text())["best_val_composite"]
    )


@pytest.mark.slow
def test_sep_cma_es_option_trains_and_resumes_exactly(tmp_path):
    kw = dict(optimizer="sep-cma-es", epochs=3, iters=5, popsize=8, patience=10)
    a = create_run(_cfg(**kw), tmp_path, tmp_path / "a")
    sa = run_training(a)
    b = create_run(_cfg(**kw), tmp_path, tmp_path / "b")
    run_training(b, stop_after=1)
    sb = run_training(b, resume=True)
    assert sa.epochs == sb.epochs == 3
    with np.load(a.path / "head.npz") as ha, np.load(b.path / "head.npz") as hb:
        assert np.array_equal(ha["W_domain"], hb["W_domain"]) and np.any(ha["W_domain"] != 0)
    hist = json.loads(a.history.read_text())
    assert hist[-1]["loss"] < 2 * np.log(5)  # below the uniform head's loss
    with pytest.raises(InputError, match="penultimate"):
        create_run(_cfg(optimizer="sep-cma-es", pool="attentive"), tmp_path, tmp_path / "c")
