"""Does the cost forecast hold? Real live runs over loopback, each beside the forecast it wrote.

Two stand-in pools, both served on 127.0.0.1 by the practice server:

- `practice`: the practice pool as it is (short answers, ~20-30 tokens);
- `lengthy`: the same models and prices, but each model answers at its own length: a reasoning
  preamble before the practice answer, lognormal in tokens with a per-model median
  (`LENGTHS`), so completion tokens differ by model and dominate the bill.

Per pool, each repetition starts from an empty disk (no cache, no earlier run), runs
`trinity train --mode live` with a fresh seed twice in one runs root: the first run's forecast has
nothing measured (priors), the second finds the first run and forecasts from it. Each run's
actual $ is what the server billed during it; `inside` says whether it fell in the forecast's 90 %
interval, `forecast_s` how long the forecast took.

    python -m trinity.perf.forecast_check --pool practice --reps 3
    python -m trinity.perf.forecast_check --pool lengthy --reps 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, cast

import numpy as np

from trinity.benchmarks.practice import practice_questions
from trinity.config import load_config
from trinity.optim.engine import start_run
from trinity.optim.forecast import FORECAST_FILE
from trinity.practice.server import start_practice_server

# median completion tokens and log-sd per practice model: one reasons at length, one writes a
# paragraph, one answers in a line (the practice answer itself adds ~20 tokens)
LENGTHS: dict[str, tuple[float, float]] = {
    "simulated/mathlete": (300.0, 0.6),
    "simulated/scholar": (80.0, 0.6),
    "simulated/coder": (10.0, 0.6),
}
_FILLER = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore "
    "et dolore magna aliqua ut enim ad minim veniam quis nostrud exercitation ullamco laboris nisi"
).split()


class LengthyResponder:
    """The practice responder, with a reasoning preamble of a per-model lognormal length (in
    practice-server tokens, 4 characters each) before every answer; deterministic per request."""

    def __init__(self, inner: Any, lengths: dict[str, tuple[float, float]]):
        self._inner = inner
        self.lengths = dict(lengths)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def reply(self, model: str, messages: list[dict[str, Any]], seed: int = 0) -> str:
        text: str = self._inner.reply(model, messages, seed)
        median, sd = self.lengths.get(model, (0.0, 0.0))
        if median <= 0:
            return text
        h = hashlib.sha256(json.dumps([model, messages, seed], sort_keys=True).encode()).digest()
        u1, u2 = (int.from_bytes(h[:8], "big") + 0.5) / 2**64, (int.from_bytes(h[8:16], "big") + 0.5) / 2**64
        z = math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2)
        chars = int(round(median * math.exp(sd * z))) * 4
        words: list[str] = []
        n = 0
        i = h[16]
        while n < chars:
            w = _FILLER[i % len(_FILLER)]
            words.append(w)
            n += len(w) + 1
            i += 7
        return "Reasoning: " + " ".join(words)[:chars] + "\n\n" + text


@contextmanager
def standin(pool: str, seed: int | None = None) -> Iterator[Any]:
    """A loopback server for `pool` (practice | lengthy); yields its handle."""
    if pool not in ("practice", "lengthy"):
        raise ValueError(f"unknown stand-in pool {pool!r}; use practice or lengthy")
    with start_practice_server(port=0, seed=seed) as handle:
        if pool == "lengthy":
            # duck-typed: the server only calls reply() and reads what __getattr__ passes through
            handle.server.responder = cast(Any, LengthyResponder(handle.server.responder, LENGTHS))
        yield handle


def run_and_compare(cfg: Any, run_dir: Path, handle: Any) -> dict[str, Any]:
    """One live run of `cfg` in `run_dir` against `handle`; its forecast beside what the server billed."""
    billed0 = handle.stats.billed_usd
    t0 = time.perf_counter()
    res = start_run(cfg, run_dir=run_dir)
    secs = time.perf_counter() - t0
    actual = handle.stats.billed_usd - billed0
    f = json.loads((run_dir / FORECAST_FILE).read_text(encoding="utf-8"))
    u = f["usd"]
    return {
        "exit_code": res.exit_code,
        "actual_usd": round(actual, 6),
        "p05": u["p05"],
        "median": u["median"],
        "p95": u["p95"],
        "inside": bool(u["p05"] <= actual <= u["p95"]),
        "answers_from": f.get("answer_lengths_from"),
        "completion_tokens_per_call": f["completion_tokens_per_call"],
        "measured_from": f["measured_from"],
        "forecast_s": f.get("secs"),
        "run_s": round(secs, 1),
    }


def check(
    pool: str,
    reps: int = 3,
    *,
    generations: int = 3,
    popsize: int = 4,
    m: int = 3,
    questions: str | None = None,
    seed0: int = 0,
    keep: str | None = None,
) -> dict[str, Any]:
    """`reps` × (a first run with nothing on disk, then a second run with another seed in the
    same runs root and cache) on the stand-in `pool`."""
    import torch  # lazy: torch loaded only when used

    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory(prefix="forecast-check-") as scratch:
        tmp = keep or scratch  # `keep`: a directory that outlives the check (its runs, to look at)
        qfile = questions
        if qfile is None:  # math + multiple choice: graded in-process, quick on 2 cores
            qpath = Path(tmp) / "questions.jsonl"
            qpath.write_text(
                "".join(json.dumps(q.to_json()) + "\n" for q in practice_questions() if q.kind != "code"),
                encoding="utf-8",
            )
            qfile = str(qpath)
        for rep in range(reps):
            root = Path(tmp) / f"rep{rep}"
            with standin(pool) as handle:
                for k in range(2):
                    cfg = load_config(
                        None,
                        {
                            "mode": "live",
                            "pool": "practice",
                            "base_url": handle.base_url,
                            "cache_path": str(root / "responses.sqlite"),
                            "questions": qfile,
                            "encoder": "tiny-qwen3",
                            "device": "cpu",
                            "popsize": popsize,
                            "m": m,
                            "generations": generations,
                            "seed": seed0 + 2 * rep + k,
                        },
                    )
                    row = run_and_compare(cfg, root / "runs" / f"run{k}", handle)
                    rows.append({"rep": rep, "run": "first (nothing on disk)" if k == 0 else "second", **row})
    inside = [r["inside"] for r in rows]
    return {
        "pool": pool,
        "generations": generations,
        "popsize": popsize,
        "m": m,
        "runs": rows,
        "inside": f"{sum(inside)}/{len(inside)}",
        "forecast_s_max": max(float(r["forecast_s"] or 0) for r in rows),
        "actual_usd_median": float(np.median([r["actual_usd"] for r in rows])),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m trinity.perf.forecast_check", description=__doc__.split("\n")[0])
    ap.add_argument("--pool", choices=("practice", "lengthy"), default="practice")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--generations", type=int, default=3)
    ap.add_argument("--popsize", type=int, default=4)
    ap.add_argument("--m", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    out = check(a.pool, a.reps, generations=a.generations, popsize=a.popsize, m=a.m, seed0=a.seed)
    if a.json:
        print(json.dumps(out, indent=2))
        return 0
    for r in out["runs"]:
        print(
            f"rep {r['rep']} {r['run']:<24} actual ${r['actual_usd']:.6f}  forecast ${r['median']:.6f} "
            f"[{r['p05']:.6f} .. {r['p95']:.6f}]  {'inside' if r['inside'] else 'OUTSIDE'}  "
            f"answers from {r['answers_from']}  forecast {r['forecast_s']:.2f} s  run {r['run_s']:.0f} s"
        )
    print(f"{out['pool']}: inside {out['inside']}, forecast at most {out['forecast_s_max']:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
