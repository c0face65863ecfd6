"""The cost and wall-time forecast of a live run, before it spends anything (`trinity plan`, and
`forecast.json` in a live run's directory at its start; `trinity ledger report RUN_DIR` puts the
actual spend beside it).

What a run will pay is, per paid call, price_in × prompt tokens + price_out × completion tokens,
summed over the sessions the recipe runs (popsize × m × generations in the plain recipe; fewer
with racing), times the share of calls that are paid (the rest are response-cache hits, or the
same request another candidate already has in flight). The forecast builds that sum from:

- the pool's prices per model (the run's price table, `--price-in/--price-out` included);
- the prompt tokens of each training question under the competition's prompts (system message
  per role + the user message), counted as characters / 4 (what the practice server bills, and
  close to real tokenizers on English; the ratio is uncertain by -15 %..+25 % without a pilot);
- the transcript that grows each turn (every earlier output, capped as post-processing caps it);
- the expected turns per session, the model mix, the completion tokens per model, and the
  paid-call share: measured when a pilot exists (a run directory's traces.jsonl, or a collected
  matrix's answers file). Without one given, what is on disk stands in: the latest earlier live
  run of the same pool and models under the runs root (its traces: every call's model, role and
  tokens), else the response cache's answers of the pool's models (completion tokens per model;
  turns and mix stay priors). Only when nothing is measured do all of them come from priors, and
  those are wide on purpose (answers 25 .. 2,500 tokens at 90 %, turns anywhere from 1 to the
  cap): a real pool's answers run from a one-line verdict to pages of reasoning, and an interval
  that excludes either is not honest. The forecast says which of these it used;
- the questions the run will see again: the training questions an earlier run went through (the
  response cache holds their turn-1 answers), and those the run itself draws in more than one
  generation, drawn as the trainer draws them. A session on a question seen before may repeat
  the earlier sessions' requests (the policies start alike), which the pilot measures when it
  saw questions again itself, else anywhere from none of them to all of them.

The 90 % interval comes from Monte Carlo over what is uncertain (bootstrap of the pilot's
sessions and calls, a drift of the policy over training — wider for the model mix when the pilot
ran with another seed, hence another starting router —, the priors without a pilot, how many
of the run's question draws are repeats, and the sessions of one question going together: the
sum wanders by n_sessions / sqrt(distinct questions) sessions' worth). Wall time
per generation: the pilot's measured generation times when it has them, else the calls' latency
(the practice pool's profile, a prior for real providers) times the turns of the slowest session.

Everything here is arithmetic on files already on disk: no call, no encoder; < 1 s.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trinity.benchmarks.prompts import render_question, system_prompt, user_message
from trinity.config import TrainConfig
from trinity.data.questions import Question
from trinity.errors import InputError
from trinity.model import ROLES
from trinity.pool.cache import cache_key, default_cache_path
from trinity.pool.providers import config_prices, load_pool
from trinity.practice.simulation import practice_setup
from trinity.runs.records import GenerationEvent, try_event
from trinity.runs.rundir import RunDir
from trinity.session.live import BASE_URL_ENV
from trinity.session.racing import race_sessions

FORECAST_FILE = "forecast.json"
DRAWS = 4000
CHARS_PER_TOKEN = 4
OUTPUT_CAP_TOKENS = 2000  # post-processing keeps 8000 characters of an output in the transcript
TURN_FRAMING_TOKENS = 12  # the "[Turn k — Role]" header a transcript block adds
PRIOR_COMPLETION_MEDIAN = 250.0  # tokens of an answer when nothing was measured
PRIOR_COMPLETION_LOG_SD = 1.4  # shared by the pool's models; 90 %: 25 .. 2,500 tokens
PRIOR_MODEL_LOG_SD = 0.5  # how far one model's answers may differ from the pool's
CACHE_DRIFT_LOG_SD = 0.3  # cached answers measure the models, not the roles a run will ask for
CACHE_MIN_ROWS = 3  # cached answers of a model before they replace its prior
CACHE_MAX_ROWS = 20000  # the newest cached answers read (the forecast stays < 1 s)
EARLIER_RUNS_SCANNED = 50  # newest run directories looked at for an earlier run of the same pool
PRIOR_LATENCY_S = (4.0, 0.8)  # a real provider's call: lognormal median 4 s, log-sd 0.8
DRIFT_LOG_SD = 0.15  # how far training may move a pilot's turns and answer lengths
MIX_CONCENTRATION = 20.0  # how far training may move a pilot's model mix
# a pilot run with another seed (or none known) started from another router: its mix says little
OTHER_SEED_MIX_CONCENTRATION = 3.0
REPEAT_MIN_CALLS = 20  # a pilot's calls on repeated questions before they measure the repeat's paid share


@dataclass
class PilotCall:
    session: str
    turn: int
    model: str
    role: str
    prompt_tokens: int
    completion_tokens: int
    paid: bool


@dataclass
class Pilot:
    source: str
    calls: list[PilotCall]
    gen_secs: list[float]  # measured wall time of its generations (a run's events), if any
    gen_sessions: int = 0  # sessions per generation in that run (to scale its wall time)
    popsize: int | None = None  # that run's candidates per generation (how many could share a request)
    seed: int | None = None  # that run's seed (the same seed starts from the same router)
    # False for a collected matrix's answers: one single-turn answer per model and question, so
    # they measure answer lengths only, not turns, the router's model mix or the paid share
    sessions_known: bool = True

    def calls_by_question_novelty(self) -> tuple[list[PilotCall], list[PilotCall]]:
        """(calls of sessions on a question the pilot had not drawn in an earlier generation,
        calls of sessions on one it had): how much a repeated question is paid again."""
        first: dict[str, str] = {}  # qid -> the generation that first drew it
        fresh: list[PilotCall] = []
        repeat: list[PilotCall] = []
        sessions = self.sessions
        for sid in sessions:  # sid: gen/candidate/qid/k (in the order the run wrote them)
            parts = sid.split("/")
            first.setdefault("/".join(parts[2:-1]), parts[0])
        for sid, calls in sessions.items():
            parts = sid.split("/")
            seen_before = self.sessions_known and first["/".join(parts[2:-1])] != parts[0]
            (repeat if seen_before else fresh).extend(calls)
        return fresh, repeat

    @property
    def sessions(self) -> dict[str, list[PilotCall]]:
        out: dict[str, list[PilotCall]] = {}
        for c in self.calls:
            out.setdefault(c.session, []).append(c)
        return out


def _tokens(chars: int) -> int:
    return (int(chars) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def load_pilot(path: str | Path) -> Pilot:
    """A pilot: a run directory (its traces.jsonl; events.jsonl for generation times), a
    traces.jsonl, or a collected matrix (M.json with M.answers.jsonl beside it, or the answers
    file itself)."""
    p = Path(path)
    if p.is_dir():
        traces = p / "traces.jsonl"
        if not traces.exists():
            raise InputError(f"pilot {p} has no traces.jsonl; give a live run directory or a collected matrix")
        pilot = _from_traces(traces)
        _add_generation_times(pilot, p / "events.jsonl")
        try:
            conf = RunDir(p).meta().config
        except InputError:
            conf = None
        if conf is not None and conf.popsize is not None and conf.seed is not None:
            pilot.popsize, pilot.seed = conf.popsize, conf.seed
        return pilot
    if p.suffix == ".json" and not p.name.endswith(".answers.jsonl"):
        p = p.with_name(p.stem + ".answers.jsonl")
    if not p.exists():
        raise InputError(f"pilot {path} not found; give a live run directory or a collected matrix")
    if p.name.endswith(".answers.jsonl"):
        return _from_answers(p)
    return _from_traces(p)


def _rows(path: Path) -> list[dict[str, Any]]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise InputError(f"pilot {path} line {n} is not JSON; give an intact traces or answers file") from None
        if isinstance(row, dict):
            out.append(row)
    return out


def _from_traces(path: Path) -> Pilot:
    calls = []
    for k, row in enumerate(_rows(path)):
        if row.get("mode", "live") != "live":
            continue
        sid = f"{row.get('gen')}/{row.get('candidate')}/{row.get('qid')}/{k}"
        for t, turn in enumerate(row.get("turns") or [], 1):
            calls.append(
                PilotCall(
                    sid,
                    t,
                    str(turn.get("model")),
                    str(turn.get("role")),
                    int(turn.get("prompt_tokens") or 0),
                    int(turn.get("completion_tokens") or 0),
                    not bool(turn.get("cache_hit")) and float(turn.get("cost_usd") or 0) >= 0,
                )
            )
    if not calls:
        raise InputError(f"pilot {path} holds no live sessions; give a live run directory or a collected matrix")
    return Pilot(str(path), calls, [])


def _from_answers(path: Path) -> Pilot:
    calls = [
        PilotCall(
            f"{row.get('qid')}/{row.get('model')}/{row.get('sample')}",
            1,
            str(row.get("model")),
            "Worker",
            0,  # collect's answers file keeps no prompt tokens: the prompt is counted from the questions
            _tokens(len(row.get("text") or "")),
            True,
        )
        for row in _rows(path)
    ]
    if not calls:
        raise InputError(f"pilot {path} holds no answers; run `trinity collect` first or give a run directory")
    return Pilot(str(path), calls, [], sessions_known=False)


def _add_generation_times(pilot: Pilot, events: Path) -> None:
    if not events.exists():
        return
    gens = [ev for r in _rows(events) if isinstance(ev := try_event(r), GenerationEvent)]
    pilot.gen_secs = [float(ev.secs) for ev in gens if ev.secs is not None]
    if gens:
        per_gen: dict[Any, int] = {}
        for c in pilot.sessions.values():
            g = c[0].session.split("/", 1)[0]
            per_gen[g] = per_gen.get(g, 0) + 1
        pilot.gen_sessions = int(round(float(np.mean(list(per_gen.values()))))) if per_gen else 0


def earlier_run(cfg: TrainConfig, runs_root: str | Path | None, exclude: str | Path | None = None) -> Path | None:
    """The newest live run directory under `runs_root` (not `exclude`) that ran on the same pool
    with the same models and left live traces: a pilot nobody had to name."""
    if runs_root is None:
        return None
    root = Path(runs_root)
    if not root.is_dir():
        return None
    skip = Path(exclude).resolve() if exclude else None
    try:
        dirs = sorted(
            (d for d in root.iterdir() if d.is_dir() and (d / "traces.jsonl").is_file()),
            key=lambda d: (d / "traces.jsonl").stat().st_mtime,
            reverse=True,
        )[:EARLIER_RUNS_SCANNED]
    except OSError:
        return None
    for d in dirs:
        if skip is not None and d.resolve() == skip:
            continue
        try:
            conf = RunDir(d).meta().config
        except (InputError, OSError):
            continue
        if conf.mode != "live" or conf.pool != cfg.pool:
            continue
        if (conf.pool_models or None) != (cfg.pool_models or None):
            continue
        if (d / "traces.jsonl").stat().st_size > 0:
            return d
    return None


def cached_completion_tokens(pool: Any, cache_path: str | None) -> dict[str, np.ndarray]:
    """Completion tokens of the answers the response cache on disk holds, per model of `pool`
    (the newest `CACHE_MAX_ROWS`)."""
    path = Path(cache_path) if cache_path else default_cache_path()
    out: dict[str, list[int]] = {}
    if not path.exists():
        return {}

    models = list(pool.models)
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            marks = ",".join("?" * len(models))
            rows = db.execute(
                f"SELECT model, result FROM responses WHERE provider = ? AND model IN ({marks}) "
                "ORDER BY created DESC LIMIT ?",
                [pool.name, *models, CACHE_MAX_ROWS],
            ).fetchall()
        finally:
            db.close()
    except sqlite3.DatabaseError:
        return {}
    for model, blob in rows:
        try:
            ct = json.loads(blob).get("completion_tokens")
        except (ValueError, AttributeError):
            continue
        if isinstance(ct, int) and ct >= 0:
            out.setdefault(model, []).append(ct)
    return {m: np.asarray(v, dtype=np.float64) for m, v in out.items()}


def base_prompt_tokens(questions: list[Question]) -> np.ndarray:
    """Turn-1 prompt tokens per question (mean over the three roles' system messages), as the
    session loop renders them."""
    out = []
    for q in questions:
        user = len(user_message(render_question(q), ""))
        out.append(np.mean([_tokens(len(system_prompt(r, q)) + user) for r in ROLES]))
    return np.asarray(out, dtype=np.float64)


def question_draws(
    rng: np.random.Generator, n_train: int, m: int, generations: int, seen: int, draws: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per draw: the share of a run's question slots (m a generation, drawn without replacement
    within it, afresh each generation) that go to a question not seen before, and how many
    distinct questions the run sees, when `seen` of the `n_train` were seen before it starts."""
    if n_train <= 0 or m <= 0:
        return np.ones(draws), np.ones(draws)
    m = min(m, n_train)
    run = np.zeros(draws, dtype=np.int64)  # questions this run has drawn
    disk = np.full(draws, min(max(seen, 0), n_train), dtype=np.int64)  # seen before it, not yet drawn
    never = n_train - disk  # seen by nobody
    fresh = np.zeros(draws, dtype=np.int64)
    for _ in range(generations):
        again = rng.hypergeometric(run, disk + never, m)
        from_disk = rng.hypergeometric(disk, never, m - again)
        new = m - again - from_disk
        fresh += new
        run += m - again
        disk -= from_disk
        never -= new
    return fresh / float(m * generations), np.maximum(run, 1).astype(np.float64)


def turn1_cache(pool: Any, questions: list[Question], cache_path: str | None) -> tuple[float, float]:
    """(share of the training questions' turn-1 requests, every model × role, the response cache
    on disk already answers; share of the training questions with at least one of them cached:
    questions an earlier run went through, whose later turns may be cached too). (0, 0) when
    there is no cache file."""
    path = Path(cache_path) if cache_path else default_cache_path()
    if not path.exists() or not questions:
        return 0.0, 0.0

    touched: set[int] = set()
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            keys = []
            owner: dict[str, int] = {}
            for qi, q in enumerate(questions):
                user = user_message(render_question(q), "")
                for model in pool.models:
                    for role in ROLES:
                        msgs = [
                            {"role": "system", "content": system_prompt(role, q)},
                            {"role": "user", "content": user},
                        ]
                        key = cache_key(pool.cache_namespace, model, msgs, dict(pool.decoding))
                        keys.append(key)
                        owner[key] = qi
            hits = 0
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                marks = ",".join("?" * len(part))
                for (key,) in db.execute(f"SELECT key FROM responses WHERE key IN ({marks})", part):
                    hits += 1
                    touched.add(owner[key])
        finally:
            db.close()
    except sqlite3.DatabaseError:
        return 0.0, 0.0
    return (hits / len(keys) if keys else 0.0), len(touched) / len(questions)


def _pool_for(cfg: TrainConfig) -> tuple[Any, float | None]:
    """The run's pool (prices, decoding, cache namespace) without starting anything, and the
    practice pool's mean profile latency in seconds (None for a real provider)."""
    if not cfg.pool:
        raise InputError("a forecast needs a live pool: pass --pool practice|openrouter|chutes|<name>")

    namespace = None
    latency = None
    base_url = cfg.base_url or os.environ.get(BASE_URL_ENV) or None
    if cfg.pool == "practice" and not base_url:
        setup = practice_setup()
        namespace = (
            "practice@simulated/"
            + hashlib.sha256(repr((setup.seed, setup.question_spread, setup.models)).encode()).hexdigest()[:16]
        )
        latency = float(np.mean([p.latency_ms for p in setup.models.values()])) / 1000.0
        base_url = "http://127.0.0.1:1"  # the in-process server's port is not known before it starts
    pool = load_pool(
        cfg.pool,
        cfg.models_yaml,
        base_url=base_url or "http://127.0.0.1:1",
        models=cfg.pool_models,
        cache_namespace=namespace,
        prices=config_prices(cfg),
    )
    return pool, latency


def sessions_per_generation(cfg: TrainConfig, n_train: int) -> int:
    m = min(cfg.m, n_train)
    recipe = getattr(cfg, "live_recipe", "plain")
    if recipe == "race":
        return race_sessions(cfg.popsize, m) + m  # and the incumbent again on all m (from generation 2)
    return cfg.popsize * m


def _q(x: np.ndarray, p: float) -> float:
    return float(np.quantile(x, p))


def forecast(
    cfg: TrainConfig,
    questions: list[Question],
    pilot: Pilot | None = None,
    generations: int | None = None,
    seed: int = 0,
    runs_root: str | Path | None = None,
    exclude: str | Path | None = None,
) -> dict[str, Any]:
    """The forecast of a live run of `cfg` over the training `questions` (see the module doc).
    Without a `pilot`, the newest earlier live run of the same pool under `runs_root` (not the
    run directory `exclude`) is the pilot, else the response cache's answers measure the models'
    answer lengths, else priors."""
    pool, practice_latency = _pool_for(cfg)
    pilot_from = f"pilot {pilot.source}" if pilot is not None else ""
    if pilot is None:
        earlier = earlier_run(cfg, runs_root, exclude)
        if earlier is not None:
            try:
                pilot = load_pilot(earlier)
                pilot_from = f"the earlier run {earlier} of this pool"
            except InputError:
                pilot = None
    pool.require_prices()
    models = list(pool.models)
    G = int(generations or cfg.generations)
    if G < 1:
        raise InputError("nothing to forecast: 0 generations make no paid call (the warm start alone is free)")
    n_train = len(questions)
    per_gen = sessions_per_generation(cfg, n_train)
    n_sessions = per_gen * G
    T = int(cfg.max_turns)
    max_tokens = float(pool.decoding.get("max_tokens") or 4096)
    p_in = np.array([pool.price(mm).input_per_1m for mm in models]) / 1e6
    p_out = np.array([pool.price(mm).output_per_1m for mm in models]) / 1e6
    base = base_prompt_tokens(questions)
    base_mean = float(base.mean()) if len(base) else 0.0
    rng = np.random.default_rng(seed)
    D = DRAWS
    paid_repeat: np.ndarray | None = None  # paid share on a question seen before (measured, else below)

    # --- turns, model mix, answer lengths, tokenizer ratio, paid share: measured or prior ---
    if pilot is not None:
        sessions = list(pilot.sessions.values())
        lens = np.array([len(s) for s in sessions], dtype=np.float64)
        boot = rng.integers(0, len(lens), size=(D, len(lens)))
        drift = np.exp(rng.normal(0, DRIFT_LOG_SD, size=D))
        if pilot.sessions_known:
            tau = np.clip(lens[boot].mean(axis=1) * drift, 1.0, T)
            pair_extra = np.clip((lens * (lens - 1) / 2)[boot].mean(axis=1) * drift**2, 0, T * (T - 1) / 2)
            counts = np.array([sum(c.model == mm for c in pilot.calls) for mm in models], dtype=np.float64)
            conc = (
                MIX_CONCENTRATION if pilot.seed is not None and pilot.seed == cfg.seed else OTHER_SEED_MIX_CONCENTRATION
            )
            mix = rng.dirichlet(conc * counts / max(counts.sum(), 1) + 0.5, size=D)
        else:  # answers only: turns and the mix as without a pilot
            tau = rng.uniform(1.0, T, size=D)
            pair_extra = tau * (tau - 1) / 2 + (T - 1) ** 2 / 24
            mix = rng.dirichlet(np.ones(len(models)), size=D)
        comp = np.array([c.completion_tokens for c in pilot.calls], dtype=np.float64)
        mu = np.empty((D, len(models)))
        for j, mm in enumerate(models):
            own = np.array([c.completion_tokens for c in pilot.calls if c.model == mm], dtype=np.float64)
            src, sd = (own, DRIFT_LOG_SD) if len(own) >= 3 else (comp, 0.5)
            mu[:, j] = src[rng.integers(0, len(src), size=(D, len(src)))].mean(axis=1) * np.exp(rng.normal(0, sd, D))
        turn1 = [c for c in pilot.calls if c.turn == 1 and c.prompt_tokens > 0]
        by_q = {q.id: b for q, b in zip(questions, base)}
        ratios = [c.prompt_tokens / by_q[_qid(c)] for c in turn1 if _qid(c) in by_q]
        if ratios:
            ratio = np.full(D, float(np.median(ratios)))
        else:
            ratio = rng.uniform(0.85, 1.25, size=D)
        fresh_calls, repeat_calls = pilot.calls_by_question_novelty()
        paid_n = sum(c.paid for c in fresh_calls)
        paid = rng.beta(paid_n + 1, len(fresh_calls) - paid_n + 1, size=D)
        if len(repeat_calls) >= REPEAT_MIN_CALLS:  # measured: how much of a repeated question is paid again
            rep_n = sum(c.paid for c in repeat_calls)
            paid_repeat = rng.beta(rep_n + 1, len(repeat_calls) - rep_n + 1, size=D)
        if not pilot.sessions_known:
            paid = rng.uniform(min(1.0, 1.5 / cfg.popsize), 1.0, size=D)
        elif pilot.popsize and pilot.popsize != cfg.popsize:
            # more candidates share more requests (the cache, one call for the same request in
            # flight): how the paid share scales with P is not measured, so anywhere from not at
            # all to 1/P
            ratio_p = pilot.popsize / cfg.popsize
            shared = ratio_p ** rng.uniform(0, 1, size=D)
            paid = np.clip(paid * shared, 0, 1)
            if paid_repeat is not None:  # the same candidates share a repeated question's requests
                paid_repeat = np.clip(paid_repeat * shared, 0, 1)
        measured = pilot_from
        answers_from = "measured"
    else:
        tau = rng.uniform(1.0, T, size=D)
        pair_extra = tau * (tau - 1) / 2 + (T - 1) ** 2 / 24
        mix = rng.dirichlet(np.ones(len(models)), size=D)
        # answer lengths: the response cache's answers of each model where it holds some, else a
        # wide prior shared by the pool's models (one pool's answers tend to be long or short together)
        cached = cached_completion_tokens(pool, cfg.cache_path)
        common = rng.normal(math.log(PRIOR_COMPLETION_MEDIAN), PRIOR_COMPLETION_LOG_SD, size=D)
        mu = np.empty((D, len(models)))
        n_cached = 0
        for j, mm in enumerate(models):
            rows = cached.get(mm)
            if rows is not None and len(rows) >= CACHE_MIN_ROWS:
                n_cached += 1
                means = rows[rng.integers(0, len(rows), size=(D, min(len(rows), 500)))].mean(axis=1)
                mu[:, j] = means * np.exp(rng.normal(0, CACHE_DRIFT_LOG_SD, D))
            else:
                mu[:, j] = np.exp(common + rng.normal(0, PRIOR_MODEL_LOG_SD, D))
        ratio = rng.uniform(0.85, 1.25, size=D)
        # candidates near each other often send the very same request: one of them pays
        paid = rng.uniform(min(1.0, 1.5 / cfg.popsize), 1.0, size=D)
        if n_cached:
            answers_from = "cached" if n_cached == len(models) else "cached+prior"
            measured = (
                f"the response cache's answers of {n_cached} of {len(models)} models "
                f"({sum(len(v) for v in cached.values())} answers); turns and model mix from priors"
            )
        else:
            answers_from = "prior"
            measured = (
                "priors only: nothing measured on disk (no pilot, no earlier run of this pool, no cached "
                "answers), so the interval is wide"
            )
    mu = np.minimum(mu, max_tokens)
    # A question seen before — earlier in this run, or by an earlier run whose answers the cache
    # holds — may repeat those sessions' requests (the policies start alike: the same first call,
    # the same transcripts after it): anywhere from none of them to all of them unless the pilot
    # measured it. How many of the run's questions are repeats is drawn as the trainer draws them.
    disk, touched = turn1_cache(pool, questions, cfg.cache_path)
    if paid_repeat is None:
        paid_repeat = paid * rng.uniform(0, 1, size=D)
    fresh, distinct = question_draws(rng, n_train, min(cfg.m, n_train), G, int(round(touched * n_train)), D)
    paid = np.clip(fresh * paid + (1 - fresh) * paid_repeat, 0, 1)

    # --- the cost of one session, then of the run ---
    carried = np.minimum(mu, OUTPUT_CAP_TOKENS) + TURN_FRAMING_TOKENS  # (D, models)
    mean_in = (mix * p_in).sum(axis=1)
    call_out = (mix * p_out * mu).sum(axis=1)
    carried_mean = (mix * carried).sum(axis=1)
    prompt_total = base_mean * ratio * tau + carried_mean * pair_extra  # prompt tokens of a session
    per_session = mean_in * prompt_total + call_out * tau
    mean_total = n_sessions * paid * per_session
    # sessions differ, and the sessions of one question go together (the same prompt, the same
    # cached answers): the sum wanders by about n_sessions / sqrt(distinct questions) sessions' worth
    clumps = np.sqrt(np.maximum(distinct, 1.0))
    total = np.maximum(mean_total + rng.normal(0, 1, D) * (n_sessions / clumps) * per_session * paid, 0)
    worst_call = float(max((p_in * (base.max() if len(base) else 0) * 2 + p_out * max_tokens).max(), 0.0))
    worst = n_sessions * T * (worst_call + float(p_in.max()) * T * (OUTPUT_CAP_TOKENS + TURN_FRAMING_TOKENS))

    # --- wall time ---
    if pilot is not None and pilot.gen_secs:
        gs = np.array(pilot.gen_secs)
        scale = 1.0
        if pilot.gen_sessions:
            scale = max(1.0, per_gen / pilot.gen_sessions) ** 0.25  # more sessions: a longer tail
        gen_s = gs[rng.integers(0, len(gs), size=(D, len(gs)))].mean(axis=1) * scale
        gen_s = gen_s * np.exp(rng.normal(0, DRIFT_LOG_SD, D))
        wall_from = "pilot generation times"
    else:
        if practice_latency is not None:
            lat = np.full(D, max(practice_latency, 0.005))
            wall_from = "practice pool profile latency; the calls only, not the encoder (a pilot measures both)"
        else:
            lat = np.exp(rng.normal(math.log(PRIOR_LATENCY_S[0]), PRIOR_LATENCY_S[1], D))
            wall_from = "a prior call latency (median 4 s); the calls only, not the encoder (a pilot measures both)"
        slowest = np.minimum(T, np.ceil(tau) + 1)  # the longest session of a generation
        gen_s = slowest * lat * 1.5 + 0.5
    wall = gen_s * G

    lo, mid, hi = _q(total, 0.05), _q(total, 0.5), _q(total, 0.95)
    per_gen_usd = total / G
    out: dict[str, Any] = {
        "version": 1,
        "pool": pool.name,
        "models": models,
        "recipe": getattr(cfg, "live_recipe", "plain"),
        "generations": G,
        "patience": getattr(cfg, "patience", None),
        "popsize": cfg.popsize,
        "m": cfg.m,
        "train_questions": n_train,
        "sessions": n_sessions,
        "sessions_per_generation": per_gen,
        "measured_from": measured,
        "answer_lengths_from": answers_from,  # measured | cached | cached+prior | prior
        "pilot_calls": len(pilot.calls) if pilot is not None else 0,
        "expected_turns": round(float(np.median(tau)), 3),
        "prompt_tokens_turn1": round(base_mean, 1),
        "completion_tokens_per_call": {mm: round(float(np.median(mu[:, j])), 1) for j, mm in enumerate(models)},
        "paid_share": round(float(np.median(paid)), 4),
        "disk_cache_turn1_share": round(disk, 4),
        "disk_cache_questions_share": round(touched, 4),
        "usd": {
            "p05": round(lo, 6),
            "median": round(mid, 6),
            "p95": round(hi, 6),
            "mean": round(float(total.mean()), 6),
        },
        "usd_per_generation": {"median": round(_q(per_gen_usd, 0.5), 6), "p95": round(_q(per_gen_usd, 0.95), 6)},
        "worst_case_usd": round(worst, 6),
        "wall_s": {"p05": round(_q(wall, 0.05), 1), "median": round(_q(wall, 0.5), 1), "p95": round(_q(wall, 0.95), 1)},
        "wall_from": wall_from,
        "budget_usd": cfg.budget_usd,
    }
    if cfg.budget_usd is not None:
        b = float(cfg.budget_usd)
        out["over_budget"] = hi > b

        def gens_at(usd: float) -> int:
            return int(min(G, b // usd)) if usd > 0 else G

        out["generations_budget_buys"] = {
            "median": gens_at(_q(per_gen_usd, 0.5)),
            "at_p95": gens_at(_q(per_gen_usd, 0.95)),
        }
    return out


def _qid(c: PilotCall) -> str:
    parts = c.session.split("/")
    return parts[2] if len(parts) > 2 else ""


def describe(f: dict[str, Any]) -> str:
    """The forecast in a few lines for the terminal."""
    u, w = f["usd"], f["wall_s"]
    lines = [
        f"forecast: {f['generations']} generations x {f['sessions_per_generation']} sessions "
        f"({f['recipe']} recipe, popsize {f['popsize']}, m {f['m']}) on {f['pool']} ({', '.join(f['models'])})",
        f"  cost      ${u['median']:.4f}  (90% interval ${u['p05']:.4f} .. ${u['p95']:.4f}; "
        f"worst case ${f['worst_case_usd']:.4f})",
        f"  wall time {hms(w['median'])}  (90% interval {hms(w['p05'])} .. {hms(w['p95'])}; from {f['wall_from']})",
        f"  from {f['measured_from']}: {f['expected_turns']:.2f} turns a session, {f['prompt_tokens_turn1']:.0f} "
        f"prompt tokens at turn 1, answers "
        + ", ".join(f"{m} {t:.0f}" for m, t in f["completion_tokens_per_call"].items())
        + f" tokens; {f['paid_share']:.0%} of calls paid (cache on disk answers "
        f"{f['disk_cache_turn1_share']:.0%} of turn-1 requests)",
    ]
    src = f.get("answer_lengths_from", "measured")
    if src != "measured":
        what = "answer lengths and turns are" if src == "prior" else "turns and the model mix are"
        lines.append(
            f"  {what} not measured for this pool: for a narrower interval give "
            "--pilot a short live run directory, or a few budgeted answers (`trinity collect --n 8 --k 1 "
            "--budget-usd 0.05 --out pilot.json …`, then --pilot pilot.json)"
        )
    if f.get("patience"):
        n = int(f["patience"])
        lines.append(
            f"  with --patience {n} the run ends once its chosen θ stands unbeaten for {n} generations "
            f"(after {min(n, f['generations'])} at the soonest); the figures above are for all {f['generations']}"
        )
    verdict = budget_verdict(f)
    if verdict is not None:
        lines.append(f"  OVER BUDGET: {verdict}" if f["over_budget"] else f"  {verdict}")
    return "\n".join(lines)


def budget_verdict(f: dict[str, Any]) -> str | None:
    """The forecast against its budget, in one sentence (the CLI and the app's new-run form both
    show it); None when no budget was given."""
    if f.get("budget_usd") is None:
        return None
    if not f["over_budget"]:
        return f"within the budget ${f['budget_usd']:g} at the upper bound"
    g = f["generations_budget_buys"]
    return (
        f"the upper bound ${f['usd']['p95']:.4f} exceeds the budget ${f['budget_usd']:g}; "
        f"the budget buys about {g['median']} generations ({g['at_p95']} at the upper bound)"
    )


def hms(s: float) -> str:
    """Seconds as 1h02m or 3m05s (the forecast's wall times)."""
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def write_forecast(run_dir: str | Path, f: dict[str, Any]) -> Path:
    p = Path(run_dir) / FORECAST_FILE
    p.write_text(json.dumps(f, indent=2) + "\n", encoding="utf-8")
    return p
