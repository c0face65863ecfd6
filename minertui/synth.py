"""A deterministic run directory in the documented formats (docs/CONTRACTS.md), for the app's
tests, snapshots and `minertui bench`: fixed times, seeded numbers, a valid hash-chained
ledger (built with `trinity.pool.ledger.record_hash`, the verifier's own function). run.json,
events and traces are built as their records (`trinity.runs.records`) and written with their
`to_json`, so a synthetic run is valid by construction.

It stands in for an engine where a real one would be too slow (100,000 traces) or not
deterministic (snapshots). `append_*` let a test play an engine that writes while the app reads.
"""

from __future__ import annotations

import functools
import json
import math
import os
import random
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from trinity.data.kinds import KINDS
from trinity.io import atomic_write_json, canonical_json
from trinity.model import ROLES
from trinity.runs.records import (
    Event,
    GenerationEvent,
    LogEvent,
    ProgressEvent,
    RunConfig,
    RunMeta,
    StatusEvent,
    TraceRecord,
    TraceTurn,
    parse_run_meta,
    read_run_meta,
)

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z: fixed, so snapshots never show the wall clock
MODELS = ["simulated/mathlete", "simulated/scholar", "simulated/coder"]
# One example per question kind (the kinds come from trinity.data.kinds, the one source): the
# Worker's output, the extracted answer and the gold, in the forms the engine's traces carry
# (`trinity.session.loop.trace_record`: code keeps no gold and answers "<code>").
_EXAMPLES: dict[str, tuple[str, str | None, Any]] = {
    "math": ("The answer is \\boxed{4}.", "4", "4"),
    "mc": ("Option B fits best.\n\nAnswer: B", "B", "B"),
    "code": ("```python\nprint(sum(map(int, input().split())))\n```", "<code>", None),
    "exact": ("So the answer is (B).", "(B)", {"target": "(B)", "form": "choice"}),
    "ifeval": (
        "a short note with no commas in it",
        "a short note with no commas in it",
        {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]},
    ),
    "funcall": (
        '```json\n[{"name": "area", "arguments": {"base": 10}}]\n```',
        '[{"name": "area", "arguments": {"base": 10}}]',
        {"function": [{}], "ground_truth": [{"area": {"base": [10]}}]},
    ),
}


@functools.cache
def _benchmark_of(kind: str) -> str:
    """The first registered benchmark whose questions are of `kind` (what a trace names)."""
    from trinity.benchmarks import list_benchmarks  # lazy: numpy + PyYAML loaded only when used

    return next((b.name for b in list_benchmarks() if getattr(b, "kind", None) == kind), "practice")


def meta(
    run_id: str,
    *,
    status: str = "finished",
    generations: int = 30,
    mode: str = "live",
    budget_usd: float | None = 5.0,
    popsize: int = 16,
    m: int = 8,
) -> RunMeta:
    return RunMeta(
        id=run_id,
        created="2026-01-01T00:00:00+00:00",
        updated="2026-01-01T00:10:00+00:00",
        status=status,  # type: ignore[arg-type]  # checked by the record
        status_message="",
        mode=mode,
        pool="practice",
        config=RunConfig.model_validate(
            {
                "mode": mode,
                "encoder": "tiny-qwen3",
                "questions": "practice",
                "matrix": "practice",
                "pool": "practice",
                "popsize": popsize,
                "generations": generations,
                "m": m,
                "sigma0": 0.1,
                "seed": 0,
                "budget_usd": budget_usd,
            }
        ),
        models=list(MODELS),
        benchmarks=["practice"],
        encoder="tiny-qwen3",
        n_params=3 * 1024 + 7168,
        splits={"train": [], "val": [], "test": []},
        git_sha=None,
        versions={},
        pid=0,
        budget_usd=budget_usd,
    )


class SynthRun:
    def __init__(self, path: str | os.PathLike, seed: int = 0):
        self.path = Path(path)
        self.rng = random.Random(seed)
        self.gen = 1  # generations are numbered from 1, like the trainer's
        self.best = -math.inf
        self.cost = 0.0
        self.seq = 0
        self.prev_h = "0" * 64
        self.t = T0
        self.with_system = False  # generation events carry an engine system sample (two GPUs)

    def create(self, **kw: Any) -> "SynthRun":
        self.path.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.path / "run.json", meta(self.path.name, **kw).to_json())
        self.event(StatusEvent(type="status", time=self._now(), status="running", message=""))
        return self

    def set_status(self, status: str, message: str = "") -> None:
        m = read_run_meta(self.path).model_copy(update={"status": status, "status_message": message})
        atomic_write_json(self.path / "run.json", parse_run_meta(m.to_json()).to_json())  # checks the status
        self.event(StatusEvent(type="status", time=self._now(), status=status, message=message))  # type: ignore[arg-type]

    # ---- writers (one whole line per write, like append_jsonl) ---------------------------
    def _append(self, name: str, lines: list[str]) -> None:
        with open(self.path / name, "a", encoding="utf-8") as f:
            f.write("".join(lines))

    def _now(self) -> float:
        return round(self.t, 3)

    def event(self, ev: Event) -> None:
        self._append("events.jsonl", [json.dumps(ev.to_json()) + "\n"])

    def generations(self, n: int, traces_per_gen: int = 0, calls_per_gen: int = 0) -> None:
        ev_lines, tr_lines, led_lines = [], [], []
        for _ in range(n):
            g = self.gen
            r = self.rng
            mean = 0.35 + 0.4 * (1 - math.exp(-g / 12)) + r.uniform(-0.03, 0.03)
            mx = min(1.0, mean + r.uniform(0.05, 0.15))
            self.best = max(self.best, mx)
            self.t += 20.0
            mix = {m: r.randint(0, 40) for m in MODELS}
            gen_cost = 0.0
            for _c in range(calls_per_gen):
                line, c = self._ledger_line()
                led_lines.append(line)
                gen_cost += c
            self.cost += gen_cost
            for _k in range(traces_per_gen):
                tr_lines.append(json.dumps(self._trace(g).to_json()) + "\n")
            ev = GenerationEvent.given(
                type="generation",
                time=self._now(),
                gen=g,
                best=round(self.best, 4),
                mean=round(mean, 4),
                max=round(mx, 4),
                min=round(mean - 0.1, 4),
                sigma=round(0.1 * math.exp(-g / 40), 5),
                evals=(g + 1) * 128,
                cost_usd=round(self.cost, 6),
                calls=(g + 1) * calls_per_gen,
                secs=20.0,
                val_acc=round(mean + 0.02, 4),
                model_mix=mix,
                role_mix={"Thinker": 10, "Worker": 80, "Verifier": 38},
                system=system_sample(g, self.t) if self.with_system else None,
            )
            ev_lines.append(json.dumps(ev.to_json()) + "\n")
            self.gen += 1
        self._append("ledger.jsonl", led_lines) if led_lines else None
        self._append("traces.jsonl", tr_lines) if tr_lines else None
        self._append("events.jsonl", ev_lines)

    def progress(self, done: int, total: int) -> None:
        self.event(ProgressEvent(type="progress", time=self._now(), gen=self.gen, done=done, total=total))

    def log(self, message: str, level: str = "info") -> None:
        self.event(LogEvent(type="log", time=self._now(), level=level, message=message))

    def _ledger_line(self) -> tuple[str, float]:
        from trinity.pool.ledger import record_hash  # lazy: PyYAML loaded only when used

        r = self.rng
        pt, ct = r.randint(200, 2000), r.randint(50, 800)
        micro = pt * 2 // 10 + ct * 8 // 10 + r.randint(0, 50)
        rec = {
            "seq": self.seq,
            "run_id": self.path.name,
            "time": _iso(self.t + r.uniform(0, 19)),
            "provider": "practice",
            "model": r.choice(MODELS),
            "prompt_tokens": pt,
            "completion_tokens": ct,
            "cost_micro_usd": micro,
            "cost_source": "estimated" if self.seq % 5 == 0 else "reported",
            "purpose": "train" if self.seq % 7 else "eval",
            "prev_h": self.prev_h,
        }
        h = record_hash(rec)
        rec["h"] = h
        self.prev_h = h
        self.seq += 1
        return canonical_json(rec) + "\n", micro / 1e6

    def _trace(self, g: int) -> TraceRecord:
        r = self.rng
        kind = KINDS[r.randrange(len(KINDS))]
        output, answer, gold = _EXAMPLES[kind]
        bench = _benchmark_of(kind)
        n = r.randint(0, 19)
        # the shipped practice set has math, mc and code questions (their text shows in the drill-down)
        qid = f"practice-{kind}-{n:02d}" if kind in ("math", "mc", "code") else f"{bench}-{n:02d}"
        turns = []
        for _k in range(r.choice((1, 1, 2, 3))):
            mp = [r.random() for _ in MODELS]
            rp = [r.random() for _ in ROLES]
            mp = [round(x / sum(mp), 4) for x in mp]
            rp = [round(x / sum(rp), 4) for x in rp]
            role = ROLES[rp.index(max(rp))]
            turns.append(
                TraceTurn(
                    model=MODELS[mp.index(max(mp))],
                    role=role,
                    model_probs=mp,
                    role_probs=rp,
                    output=output,
                    verdict="ACCEPT" if role == "Verifier" else None,
                    cost_usd=0.0001,
                    cache_hit=False,
                )
            )
        correct = r.random() < 0.6
        return TraceRecord(
            gen=g,
            candidate=r.randint(0, 15),
            qid=qid,
            benchmark=bench,
            kind=kind,
            mode="live",
            turns=turns,
            answer=answer,
            gold=gold,
            correct=correct,
            reward=1.0 if correct else 0.0,
            cost_usd=round(0.0001 * len(turns), 6),
            time=self._now(),
        )


def system_sample(g: int, t: float) -> dict[str, Any]:
    """A deterministic engine system sample (trinity.runs.system's shape) for generation `g`."""
    gib = 2**30
    util = int(55 + 35 * math.sin(g / 2.0))
    return {
        "time": round(t, 3),
        "gpus": [
            {
                "index": i,
                "name": "NVIDIA H100 80GB HBM3",
                "util": max(0, util - 40 * i),
                "mem_used": (30 - 20 * i) * gib + g * gib // 4,
                "mem_total": 80 * gib,
                "temp": 60 + util // 5 - 10 * i,
                "power_w": float(150 + 3 * util - 60 * i),
            }
            for i in range(2)
        ],
        "cpu": 20.0 + (g % 5) * 6,
        "ram_used": 40 * gib,
        "ram_total": 251 * gib,
        "rss": 6 * gib + g * gib // 10,
        "disk_free": 412 * gib,
    }


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def make_run(
    path: str | os.PathLike,
    *,
    generations: int = 12,
    planned: int = 30,
    traces_per_gen: int = 16,
    calls_per_gen: int = 4,
    status: str = "finished",
    seed: int = 0,
    system: bool = False,
) -> SynthRun:
    """A whole run in one call (tests and the benchmark); `system`: with engine system samples."""
    run = SynthRun(path, seed).create(status="running", generations=planned)
    run.with_system = system
    run.log("encoder tiny-qwen3 loaded; 3 simulated models")
    run.generations(generations, traces_per_gen, calls_per_gen)
    if status == "running":
        run.progress(40, 128)
    else:
        run.set_status(status, f"{generations} generations" if status == "finished" else "")
    return run


def make_sweep(
    path: str | os.PathLike,
    states: tuple[str, ...] = ("finished", "running", "finished", "pending"),
    *,
    generations: int = 10,
    budget_usd: float | None = 0.5,
    calls_per_gen: int = 2,
    status: str = "running",
) -> Path:
    """A sweep directory as `trinity sweep` lays it out (sweep.json + `trials/<id>/` run dirs, in
    trinity.sweep.runner's format), one trial per entry of `states` ("pending": no run dir yet).
    Each trial is a `make_run` with its own seed, so their curves differ."""
    from trinity.sweep.runner import FORMAT, SWEEP_JSON, TRIALS_DIR  # lazy: numpy + pydantic loaded only when used

    root = Path(path)
    trials = []
    for i, state in enumerate(states):
        tid = f"t{i:03d}"
        overrides = {"sigma0": (0.05, 0.2)[i % 2], "seed": i // 2}
        if state != "pending":
            make_run(
                root / TRIALS_DIR / tid,
                generations=generations - 3 * (state == "running"),
                planned=generations,
                traces_per_gen=0,
                calls_per_gen=calls_per_gen,
                status=state,
                seed=10 + i,
            )
        trials.append(
            {
                "id": tid,
                "dir": f"{TRIALS_DIR}/{tid}",
                "overrides": overrides,
                "label": " ".join(f"{k}={v}" for k, v in overrides.items()),
                "config": {"generations": generations, **overrides},
                "state": state,
            }
        )
    (root / TRIALS_DIR).mkdir(parents=True, exist_ok=True)
    atomic_write_json(
        root / SWEEP_JSON,
        {
            "kind": "sweep",
            "format": FORMAT,
            "id": root.name,
            "created": "2026-01-01T00:00:00+00:00",
            "status": status,
            "spec": {},
            "budget_usd": budget_usd,
            "trials": trials,
        },
    )
    return root
