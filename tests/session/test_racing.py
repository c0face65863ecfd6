"""The race recipe of live training (trinity.session.racing) against the practice server over
loopback: common random numbers, successive halving (survivors get the remaining questions, the
ES sees every candidate ranked), and the incumbent re-evaluated every generation."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from trinity.benchmarks.practice import practice_questions
from trinity.config import TrainConfig
from trinity.practice.server import start_practice_server
from trinity.runs.rundir import RunDir
from trinity.session.evaluation import GenerationHooks
from trinity.session.fitness import LiveFitness
from trinity.session.racing import race_plan, race_sessions

MODELS = ["simulated/mathlete", "simulated/scholar", "simulated/coder"]  # the practice pool's order


class BagRouter:
    """A fixed-policy stand-in on the paired path: logits = θ's head · bag-of-words features."""

    dim = 16

    def __init__(self, n_models: int = 3):
        self.n_models = n_models
        self.n_params = (n_models + 3) * self.dim

    def features(self, texts):
        out = np.zeros((len(texts), self.dim))
        for i, t in enumerate(texts):
            for w in t.split():
                out[i, zlib.crc32(w.encode()) % self.dim] += 1.0
            out[i] /= max(1.0, np.linalg.norm(out[i]))
        return out

    def paired_logits(self, thetas, texts, cands):
        W = np.asarray(thetas)[:, : self.n_params].reshape(len(thetas), self.n_models + 3, self.dim)
        return np.einsum("nkd,nd->nk", W[np.asarray(cands)], self.features(texts))


@pytest.fixture(scope="module")
def server():
    with start_practice_server(port=0) as h:
        yield h


def _fitness(tmp_path, server, name, **over):
    cfg = TrainConfig(
        **{
            "mode": "live",
            "pool": "practice",
            "base_url": server.base_url,
            "questions": "practice",
            "cache_path": str(tmp_path / f"{name}.sqlite"),
            "popsize": 8,
            "m": 8,
            "seed": 1,
            **over,
        }
    )
    run = RunDir(tmp_path / name)
    run.path.mkdir()
    run.write_meta({"id": run.id, "status": "created", "mode": "live", "config": cfg.resolved(), "models": MODELS})
    return LiveFitness(cfg, run, BagRouter(), MODELS)


def _hooks(traces):
    return GenerationHooks(lambda d, t: None, lambda m, r: None, traces.append)


QUESTIONS = [q for q in practice_questions() if q.kind in ("math", "mc")][:8]


def test_race_plan_halves_candidates_and_doubles_questions():
    assert race_plan(32, 16) == [(32, 4), (16, 8), (8, 16)]
    assert race_sessions(32, 16) == 32 * 4 + 16 * 4 + 8 * 8 < 32 * 16
    assert race_plan(2, 5) == [(2, 5)] and race_plan(8, 1) == [(8, 1)]


def test_crn_gives_every_candidate_the_same_sampling_draws(tmp_path, server):
    """Candidates 0 and 1 have the same θ: under common random numbers their sampled routes, and
    so their sessions, are identical; with draws seeded per candidate they are not."""
    rng = np.random.RandomState(0)
    router = BagRouter()
    theta = 0.3 * rng.randn(router.n_params)
    thetas = np.stack([theta, theta, 0.3 * rng.randn(router.n_params)])
    pairs = [(c, q) for c in range(3) for q in QUESTIONS[:6]]
    routes = {}
    for recipe in ("race", "plain"):
        fit = _fitness(tmp_path, server, f"crn-{recipe}", policy="sample", temperature=3.0, live_recipe=recipe)
        try:
            trajs = fit.run_sessions(thetas, pairs, "g1")
        finally:
            fit.close()
        routes[recipe] = [[(t.model, t.role) for t in tr.turns] for tr in trajs]
        if recipe == "race":  # an evaluation's repeats of one θ are independent draws, even in a race run
            fit = _fitness(tmp_path, server, "crn-eval", policy="sample", temperature=3.0, live_recipe=recipe)
            try:
                trajs = fit.run_sessions(thetas, pairs, "eval/test/router", purpose="eval")
            finally:
                fit.close()
            routes["eval"] = [[(t.model, t.role) for t in tr.turns] for tr in trajs]
    same = lambda r: r[0:6] == r[6:12]  # noqa: E731  candidate 0's sessions vs candidate 1's
    assert same(routes["race"])
    assert not same(routes["plain"])
    assert not same(routes["eval"])


def test_successive_halving_ranks_every_candidate_and_reevaluates_the_incumbent(tmp_path, server):
    rng = np.random.RandomState(2)
    router = BagRouter()
    fit = _fitness(tmp_path, server, "race", live_recipe="race")
    P, m = 8, 8
    try:
        traces: list[dict] = []
        thetas = 0.5 * rng.randn(P, router.n_params)
        ev = fit.evaluate(1, thetas, QUESTIONS, _hooks(traces))
        R, rank = ev.rewards, ev.ranking
        assert rank is not None and R.shape == (P, m) and np.all(np.isfinite(rank))
        # stage by stage: 8 on questions 0..1, the better 4 on 2..3, the better 2 on 4..7
        seen = np.isfinite(R)
        assert [int(seen[:, j].sum()) for j in range(m)] == [8, 8, 4, 4, 2, 2, 2, 2]
        for c in range(P):  # a candidate met a prefix of the questions: survivors get the rest
            k = int(seen[c].sum())
            assert seen[c, :k].all() and not seen[c, k:].any()
        survivors = np.flatnonzero(seen[:, -1])
        # the better half by mean on the questions met so far went on
        for stage_end, went_on in ((2, seen[:, 2]), (4, seen[:, 4])):
            met = np.flatnonzero(seen[:, stage_end - 1])
            means = R[met, :stage_end].mean(axis=1)
            assert means[went_on[met]].min() >= means[~went_on[met]].max()
        # one consistent ranking: every later stage above every earlier one, within a stage by mean
        order = np.argsort(-rank)
        met_counts = seen.sum(axis=1)[order]
        assert list(met_counts) == sorted(met_counts, reverse=True)
        assert set(order[: len(survivors)]) == set(survivors)
        for k in set(met_counts.tolist()):
            grp = order[met_counts == k]
            means = np.nanmean(R[grp], axis=1)
            assert list(means) == sorted(means, reverse=True)
        assert len(traces) == race_sessions(P, m) and fit.incumbent is not None
        winner = int(order[0])
        assert np.array_equal(fit.incumbent["theta"], thetas[winner]) and fit.incumbent["gen"] == 1
        assert ev.stats.extra is not None and ev.stats.extra["incumbent_replaced"] == 1.0

        # generation 2: the incumbent meets all the generation's questions again, beside the race
        traces2: list[dict] = []
        thetas2 = 0.5 * rng.randn(P, router.n_params)
        ev2 = fit.evaluate(2, thetas2, QUESTIONS, _hooks(traces2))
        inc_traces = [t for t in traces2 if t.get("incumbent")]
        assert sorted(t["qid"] for t in inc_traces) == sorted(q.id for q in QUESTIONS)
        assert len(traces2) == race_sessions(P, m) + m
        w2 = int(np.argmax(ev2.ranking))
        extra = ev2.stats.extra
        assert extra is not None
        if extra["incumbent_replaced"]:
            assert np.array_equal(fit.incumbent["theta"], thetas2[w2]) and fit.incumbent["gen"] == 2
        else:  # kept: it now holds the mean of both generations' evaluations
            assert np.array_equal(fit.incumbent["theta"], thetas[winner]) and extra["incumbent_evals"] == 2 * m
        # the state survives a checkpoint: the incumbent goes with it
        state = fit.state_dict()
        assert np.array_equal(state["incumbent"]["theta"], fit.incumbent["theta"])
    finally:
        fit.close()


def test_the_incumbent_is_replaced_only_by_a_better_winner_on_the_same_questions(tmp_path, server):
    fit = _fitness(tmp_path, server, "inc")
    try:
        a, b, c = np.zeros(4), np.ones(4), np.full(4, 2.0)
        assert fit.update_incumbent(1, a, np.array([1.0, 1, 1, 1]), None)["incumbent_replaced"] == 1.0
        # a lucky draw: the incumbent scored 1.0; re-evaluated at 0.5 it still beats a 0.25 winner
        x = fit.update_incumbent(2, b, np.array([0.25, 0.25, 0.25, 0.25]), np.array([0.5, 0.5, 0.5, 0.5]))
        assert x["incumbent_replaced"] == 0.0 and np.array_equal(fit.incumbent["theta"], a)
        assert x["incumbent_reward"] == pytest.approx(0.75) and x["incumbent_evals"] == 8
        # a winner better on the same questions takes its place
        y = fit.update_incumbent(3, c, np.array([1.0, 1, 0, 1]), np.array([0.0, 1, 0, 0]))
        assert y["incumbent_replaced"] == 1.0 and np.array_equal(fit.incumbent["theta"], c)
        assert fit.incumbent["gen"] == 3
    finally:
        fit.close()


def test_the_recipe_is_recorded_and_plain_is_one_flag_away(tmp_path):
    assert TrainConfig().live_recipe == "race"
    assert TrainConfig(live_recipe="plain").resolved()["live_recipe"] == "plain"
    assert json.loads(json.dumps(TrainConfig().resolved()))["live_recipe"] == "race"
