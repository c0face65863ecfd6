"""Label warm start (issue 14): the head's model rows fitted on the training labels before ES."""

import json

import numpy as np
from optim_helpers import trinity_inproc
from train_argv import train_argv

from trinity.data.learningtask import TaskSpec, generate_task
from trinity.data.matrix import save_matrix
from trinity.data.questions import save_questions
from trinity.io import read_jsonl
from trinity.optim.warmstart import fit_logistic, routed_accuracy

SPEC = TaskSpec("wtask", topics=3, models=3, k=4, edge=0.35, n_per_topic=60, seed=0)


def _inputs(tmp_path):
    qs, mat, _ = generate_task(SPEC)
    q, m = tmp_path / "q.jsonl", tmp_path / "m.json"
    save_questions(q, qs)
    save_matrix(m, mat)
    return q, m


def _train(capsys, q, m, run, *extra):
    argv = train_argv(run, *extra, questions=q, matrix=m, generations=3, popsize=8, m=16, seed=0)
    rc, out, err = trinity_inproc(capsys, *argv)
    assert rc == 0, err
    return out, json.loads((run / "summary.json").read_text())


def test_warm_start_beats_es_only_held_out(tmp_path, capsys):
    q, m = _inputs(tmp_path)
    out_w, warm = _train(capsys, q, m, tmp_path / "warm")  # default: warm start on in cached mode
    _, es = _train(capsys, q, m, tmp_path / "es", "--warm-start", "none")
    # measured (seed 0, 36 test questions): 0.94 with the warm start, 0.76 ES only, 0.75 best single
    assert warm["test_acc"] >= es["test_acc"] + 0.1, (warm["test_acc"], es["test_acc"])
    assert warm["test_acc"] >= warm["test_best_single"]["acc"] + 0.1
    # what was fitted is recorded: run.json, summary, and a generation-0 event
    meta = json.loads((tmp_path / "warm" / "run.json").read_text())
    ws = meta["warm_start"]
    assert ws["method"] == "labels" and ws["n_train"] == len(meta["splits"]["train"])
    assert 0 <= ws["train_acc"] <= 1 and 0 <= ws["val_acc"] <= 1 and ws["lambda"] > 0
    assert warm["warm_start"] == ws
    evs = [e for e in read_jsonl(tmp_path / "warm" / "events.jsonl") if e["type"] in ("warm_start", "generation")]
    assert evs[0]["type"] == "warm_start" and evs[0]["gen"] == 0 and [e["gen"] for e in evs[1:]] == [1, 2, 3]
    assert "warm start (generation 0" in out_w
    # history.json keeps one row per ES generation (the competition's format)
    assert [h["gen"] for h in json.loads((tmp_path / "warm" / "history.json").read_text())] == [1, 2, 3]
    assert es["warm_start"] == {"method": "none"}
    assert "warm_start" not in json.loads((tmp_path / "es" / "run.json").read_text())


def test_warm_start_labels_needs_a_matrix(tmp_path, capsys):
    rc, _, err = trinity_inproc(
        capsys,
        "train",
        "--mode",
        "live",
        "--pool",
        "practice",
        "--questions",
        "practice",
        "--encoder",
        "tiny-qwen3",
        "--warm-start",
        "labels",
        "--run-dir",
        str(tmp_path / "r"),
    )
    assert rc != 0 and "--warm-start labels" in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_logistic_fit_routes_separable_labels_exactly():
    # two orthogonal clusters, model 0 right on the first, model 1 on the second: the fit routes both
    rng = np.random.RandomState(0)
    X = np.zeros((40, 4))
    X[:20, 0], X[20:, 1] = 1.0, 1.0
    X += 0.05 * rng.randn(*X.shape)
    acc = np.zeros((40, 2))
    acc[:20, 0], acc[20:, 1] = 1.0, 1.0
    W = fit_logistic(X, acc, 1e-3)
    assert routed_accuracy(W, X, acc) == 1.0


def test_role_rows_default_reads_whether_a_session_has_turns():
    # fitted on half the practice questions' synthesised transcripts, checked on the other half's
    # transcripts in the practice pool's own phrasing (tiny-qwen3; measured 0.90 / 0.91)
    from trinity.benchmarks.practice import practice_questions
    from trinity.competition.text import router_text
    from trinity.config import load_config
    from trinity.model import ROLES
    from trinity.optim.engine import build_router
    from trinity.optim.warmstart import fit_role_rows, frozen_features

    qs = [q for q in practice_questions() if q.kind != "code"]
    models = ["simulated/coder", "simulated/mathlete", "simulated/scholar"]
    router = build_router(load_config(None, {"encoder": "tiny-qwen3", "mode": "live", "pool": "practice"}), 3)
    text = router_text(None)
    rows, info = fit_role_rows(router, text, qs[: len(qs) // 2], models)
    assert rows.shape == (3, router.hidden) and info["role_train_acc"] >= 0.9
    bare, later = [], []
    for i, q in enumerate(qs[len(qs) // 2 :]):
        name = models[i % 3].split("/")[-1]
        worker = (
            f"({name}, simulated) Comparing the options one by one, option C fits best.\n\nAnswer: C"
            if q.kind == "mc"
            else f"({name}, simulated) Working through the problem step by step.\n"
            "After simplifying, the result is 7.\n\nThe final answer is $\\boxed{7}$."
        )
        verifier = f"({name}, simulated) The latest answer does not hold up when I check it.\n\nVERDICT: REVISE"
        turns = [("Worker", models[i % 3], worker), ("Verifier", models[i % 3], verifier)] * 2
        query = text.render_question(q)
        bare.append(text.encoder_input(query))
        later += [text.encoder_input(query, turns[:n]) for n in range(1, 5)]
    pick = lambda texts: np.argmax(frozen_features(router, texts) @ rows.T, axis=1)
    assert np.mean(pick(bare) == ROLES.index("Worker")) >= 0.8
    assert np.mean(pick(later) == ROLES.index("Verifier")) >= 0.8


def test_the_fits_reach_the_minimum_of_the_objective_torch_states():
    """fit_logistic and fit_softmax write their gradients out for scipy: at what they return, the
    gradient torch's autograd takes of the same objective (BCE with logits; weighted
    cross-entropy as torch weighs it) is zero."""
    import torch

    from trinity.optim.warmstart import fit_logistic, fit_softmax

    rng = np.random.RandomState(0)
    X = rng.randn(60, 12) + 1.0
    Y = (rng.rand(60, 3) < 0.4).astype(float)
    W = torch.as_tensor(fit_logistic(X, Y, 1e-3)).requires_grad_(True)
    Xt = torch.as_tensor(X)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(Xt @ W.T, torch.as_tensor(Y), reduction="sum") / 60
    (loss + 0.5 * 1e-3 * (W * W).sum()).backward()
    assert float(W.grad.abs().max()) < 1e-6
    y = rng.randint(0, 3, 60)
    cw = np.array([1.0, 4.0, 0.5])
    R = torch.as_tensor(fit_softmax(X, y, cw, 1e-3)).requires_grad_(True)
    ce = torch.nn.functional.cross_entropy(Xt @ R.T, torch.as_tensor(y), weight=torch.as_tensor(cw))
    (ce + 0.5 * 1e-3 * (R * R).sum()).backward()
    assert float(R.grad.abs().max()) < 1e-6
