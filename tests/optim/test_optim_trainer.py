"""The trainer in-process, over the stand-in router: learning, run-dir contents, exact resume,
stop conditions, and checkpoint checks."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from optim_helpers import history_sans_secs, standin_trainer, tree_digest, write_inputs
from optim_standin import MODELS

from trinity.config import TrainConfig
from trinity.errors import BudgetExceeded, CheckpointError, OutOfCredit
from trinity.io import read_jsonl
from trinity.optim import checkpoint as ckpt
from trinity.optim.fitness import CachedFitness
from trinity.runs.rundir import RunDir


@pytest.fixture()
def cfg(tmp_path):
    q, m = write_inputs(tmp_path)
    return TrainConfig(questions=str(q), matrix=str(m), popsize=12, generations=8, m=12, sigma0=0.3, seed=5)


def test_run_dir_contents_and_learning(tmp_path, cfg):
    events = []
    # ES from a zero head (a label warm start would begin at the optimum of this task)
    t = standin_trainer(
        tmp_path / "run", cfg.model_copy(update={"generations": 15, "warm_start": "none"}), on_event=events.append
    )
    res = t.train()
    assert res.status == "finished" and res.exit_code == 0
    run = RunDir(tmp_path / "run")
    gens = [e for e in run.read_events() if e["type"] == "generation"]
    assert [g["gen"] for g in gens] == list(range(1, 16))
    for g in gens:
        assert {
            "gen",
            "best",
            "mean",
            "max",
            "sigma",
            "evals",
            "secs",
            "cost_usd",
            "calls",
            "val_acc",
            "model_mix",
            "role_mix",
        } <= set(g)
        assert sum(g["model_mix"].values()) == 12 * 12 == sum(g["role_mix"].values())
        assert list(g["model_mix"]) == MODELS
    assert run.read_events()[-1]["type"] == "status" and run.read_events()[-1]["status"] == "finished"
    # the event is the history record plus its time and the box's sample (events only: a
    # resumed run's history stays bit-identical)
    assert json.loads(run.history.read_text()) == [
        {k: v for k, v in g.items() if k not in ("type", "time", "system")} for g in gens
    ]
    assert all({"gpus", "cpu", "ram_used", "rss", "disk_free"} <= set(g["system"]) for g in gens)
    # one trace line per candidate x question of every generation
    traces = read_jsonl(run.traces)
    assert len(traces) == 15 * 12 * 12
    tr = traces[0]
    assert tr["mode"] == "cached" and len(tr["turns"]) == 1
    assert len(tr["turns"][0]["model_probs"]) == 3 and len(tr["turns"][0]["role_probs"]) == 3
    assert tr["turns"][0]["model"] in MODELS and tr["reward"] in (0.0, 0.25, 0.5, 0.75, 1.0)
    summary = json.loads(run.summary.read_text())
    theta = np.load(run.best_theta)
    assert theta.shape == (t.router.n_params,) and theta.dtype == np.float64
    # the summary's numbers are recomputable from θ and the matrix
    val = [q for q in t.inputs.questions if q.id in set(t.inputs.splits["val"])]
    assert summary["best_theta"]["val_acc"] == pytest.approx(t.fitness.validate(theta[None], val).mean())
    assert "rule" in summary["best_theta"]
    # learning: held-out routing beats the best single model by a wide margin on this task
    assert summary["test_acc"] >= summary["test_best_single"]["acc"] + 0.15
    assert gens[-1]["mean"] > gens[0]["mean"]


def test_resume_after_crash_equals_uninterrupted(tmp_path, cfg):
    ref = standin_trainer(tmp_path / "ref", cfg, run_id="r")
    ref.train()

    class Crash(Exception):
        pass

    for crash_gen in (1, 4, 7):
        path = tmp_path / f"crash{crash_gen}"
        t = standin_trainer(path, cfg, run_id="r")
        real = t.fitness.evaluate

        def evaluate(gen, thetas, qs, hooks, real=real, crash_gen=crash_gen):
            if gen == crash_gen:
                raise Crash()  # dies mid-generation, after earlier checkpoints
            return real(gen, thetas, qs, hooks)

        t.fitness.evaluate = evaluate
        with pytest.raises(Crash):
            t.train()
        # a new process: fresh objects, state from the checkpoint only
        t2 = standin_trainer(path, cfg, run_id="r")
        if ckpt.has_checkpoint(t2.run):
            _, state = ckpt.read_checkpoint(t2.run, run_id="r", config_hash=cfg.hash())
            t2.load_state(state)
        assert t2.train(resume=True).status == "finished"
        assert np.array_equal(np.load(path / "best_theta.npy"), np.load(tmp_path / "ref/best_theta.npy"))
        assert history_sans_secs(path / "history.json") == history_sans_secs(tmp_path / "ref/history.json")
        assert (path / "traces.jsonl").read_bytes().count(b"\n") == (tmp_path / "ref/traces.jsonl").read_bytes().count(
            b"\n"
        )
        gens = [e["gen"] for e in RunDir(path).read_events() if e["type"] == "generation"]
        assert sorted(gens) == list(range(1, 9)) and len(set(gens)) == 8


def test_sigterm_stops_with_status_and_resumable(tmp_path, cfg):
    import os
    import signal

    t = standin_trainer(tmp_path / "run", cfg)
    real = t.fitness.evaluate

    def evaluate(gen, thetas, qs, hooks):
        if gen == 3:
            os.kill(os.getpid(), signal.SIGTERM)  # the handler only sets a flag
        return real(gen, thetas, qs, hooks)

    t.fitness.evaluate = evaluate
    prior = signal.getsignal(signal.SIGTERM)
    res = t.train()
    assert res.status == "stopped" and "SIGTERM" in res.message
    assert signal.getsignal(signal.SIGTERM) == prior  # handlers restored
    last = RunDir(tmp_path / "run").read_events()[-1]
    assert last["type"] == "status" and last["status"] == "stopped"
    # the generation in flight was abandoned; the last completed one is checkpointed
    manifest = json.loads((tmp_path / "run/checkpoint/manifest.json").read_text())
    assert manifest["generation"] == 2
    assert RunDir(tmp_path / "run").read_meta()["status"] == "stopped"


@pytest.mark.parametrize(
    "exc, words", [(OutOfCredit, "stopped: out of credit"), (BudgetExceeded, "stopped: budget reached")]
)
def test_fitness_stop_conditions(tmp_path, cfg, exc, words):
    class Broke(CachedFitness):
        def evaluate(self, gen, thetas, qs, hooks):
            if gen == 2:
                raise exc("provider said no")
            return super().evaluate(gen, thetas, qs, hooks)

    t = standin_trainer(tmp_path / "run", cfg, fitness_cls=Broke)
    res = t.train()
    assert res.status == "stopped" and res.message.startswith(words) and res.exit_code == 4
    run = RunDir(tmp_path / "run")
    assert run.read_events()[-1]["message"].startswith(words)
    assert json.loads((run.checkpoint_dir / "manifest.json").read_text())["generation"] == 1
    assert len(json.loads(run.history.read_text())) == 1 and run.summary.exists()


def test_checkpoint_checks(tmp_path, cfg):
    standin_trainer(tmp_path / "a", cfg.model_copy(update={"generations": 2}), run_id="a").train()
    standin_trainer(tmp_path / "b", cfg.model_copy(update={"generations": 2}), run_id="b").train()
    a = RunDir(tmp_path / "a")
    _, state = ckpt.read_checkpoint(a, run_id="a", config_hash=cfg.hash())
    assert state["gen"] == 2 and len(list(a.checkpoint_dir.glob("state-*.npz"))) == 1
    with pytest.raises(CheckpointError, match="another config"):
        ckpt.read_checkpoint(a, run_id="a", config_hash="0" * 16)
    # another run's checkpoint copied in
    shutil.rmtree(a.checkpoint_dir)
    shutil.copytree(tmp_path / "b/checkpoint", a.checkpoint_dir)
    with pytest.raises(CheckpointError, match="belongs to run 'b'.*foreign"):
        ckpt.read_checkpoint(a, run_id="a", config_hash=cfg.hash())
    # a flipped byte in the state
    b = RunDir(tmp_path / "b")
    f = next(b.checkpoint_dir.glob("state-*.npz"))
    blob = bytearray(f.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    f.write_bytes(bytes(blob))
    before = tree_digest(b.path)
    with pytest.raises(CheckpointError, match="checksum mismatch"):
        ckpt.read_checkpoint(b, run_id="b", config_hash=cfg.hash())
    assert tree_digest(b.path) == before
    (b.checkpoint_dir / "manifest.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="corrupt"):
        ckpt.read_checkpoint(b, run_id="b", config_hash=cfg.hash())


def test_ledger_head_is_recorded(tmp_path, cfg):
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    run.ledger.write_text('{"seq": 0, "h": "aa"}\n{"seq": 1, "h": "bb"}\n{"seq": 2, "h": "c')  # torn tail
    standin_trainer(run.path, cfg.model_copy(update={"generations": 1})).train()
    assert json.loads((run.checkpoint_dir / "manifest.json").read_text())["ledger_head"] == "bb"


def test_sample_policy_is_reproducible(tmp_path, cfg):
    c = cfg.model_copy(update={"policy": "sample", "generations": 3})
    standin_trainer(tmp_path / "a", c).train()
    np.random.seed(123)  # the global RNG must not matter
    standin_trainer(tmp_path / "b", c).train()
    roles = {t["turns"][0]["role"] for t in read_jsonl(tmp_path / "a/traces.jsonl")}
    assert len(roles) == 3  # sampling does draw
    assert history_sans_secs(tmp_path / "a/history.json") == history_sans_secs(tmp_path / "b/history.json")


def test_finishing_a_run_killed_after_its_last_checkpoint(tmp_path, cfg):
    c = cfg.model_copy(update={"generations": 3})
    standin_trainer(tmp_path / "run", c, run_id="r").train()
    run = RunDir(tmp_path / "run")
    run.update_meta(status="running")  # as if SIGKILLed after the last checkpoint, before the summary
    run.summary.unlink()
    n_events = len(run.read_events())
    t = standin_trainer(run.path, c, run_id="r")
    t.load_state(ckpt.read_checkpoint(run, run_id="r", config_hash=c.hash())[1])
    assert t.train(resume=True).status == "finished"
    new = run.read_events()[n_events:]
    assert [e["type"] for e in new] == ["status", "status"]  # running, finished: no generation ran again
    assert run.summary.exists() and run.read_meta()["status"] == "finished"


def test_fitness_without_validation_uses_the_cached_validator(tmp_path, cfg):
    class NoFreeValidation(CachedFitness):  # like live mode: validating would cost money
        def validate(self, thetas, questions):
            return None

    c = cfg.model_copy(update={"generations": 3})
    t = standin_trainer(tmp_path / "run", c, fitness_cls=NoFreeValidation)
    t.train()
    gens = [e for e in RunDir(tmp_path / "run").read_events() if e["type"] == "generation"]
    assert all("val_acc" not in g for g in gens)
    assert json.loads((tmp_path / "run/summary.json").read_text())["best_theta"]["which"] == "es_mean"

    t = standin_trainer(tmp_path / "run2", c, fitness_cls=NoFreeValidation)
    t.validator = CachedFitness(t.router, t.inputs.matrix, list(MODELS), traces="none", text=lambda q: q.question)
    t.train()
    gens = [e for e in RunDir(tmp_path / "run2").read_events() if e["type"] == "generation"]
    assert all(0 <= g["val_acc"] <= 1 for g in gens)
    assert "test_acc" in json.loads((tmp_path / "run2/summary.json").read_text())


def test_an_unreachable_pool_stops_the_run_without_keeping_the_generation(tmp_path, cfg):
    from trinity.errors import PoolUnreachable

    class LosesItsServer(CachedFitness):  # the Fitness contract: the fitness raises the pool's stop itself
        def evaluate(self, gen, thetas, qs, hooks):
            ev = super().evaluate(gen, thetas, qs, hooks)  # the generation ran (rewards, traces) …
            if gen == 2:  # … but the server went away during it
                raise PoolUnreachable("pool practice is unreachable at http://127.0.0.1:9/v1")
            return ev

    t = standin_trainer(tmp_path / "run", cfg, fitness_cls=LosesItsServer)
    res = t.train()
    assert res.status == "stopped" and res.exit_code == 4
    assert res.message.startswith("stopped: pool practice is unreachable")
    run = RunDir(tmp_path / "run")
    assert json.loads((run.checkpoint_dir / "manifest.json").read_text())["generation"] == 1
    assert [r["gen"] for r in json.loads(run.history.read_text())] == [1]  # no generation of zeros
    assert {t["gen"] for t in read_jsonl(run.traces)} <= {1}


def test_pycma_loads_without_matplotlib_or_scipy_stats_and_they_still_import_after():
    code = (
        "import sys\n"
        "from trinity.optim.trainer import import_cma\n"
        "cma = import_cma()\n"
        "hidden = [m for m in ('matplotlib', 'scipy.stats') if m in sys.modules]\n"
        "es = cma.CMAEvolutionStrategy([0.0] * 4, 0.5, {'seed': 1, 'verbose': -9, 'popsize': 6})\n"
        "es.tell(es.ask(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])\n"
        "import scipy.stats\n"
        "print(hidden, es.countiter, scipy.stats.kendalltau([1, 2, 3], [1, 3, 2])[0] > 0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["[]", "1", "True"], out.stderr
