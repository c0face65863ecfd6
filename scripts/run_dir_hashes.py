"""Hash every file of a tiny cached run and a tiny live run, written under a fixed clock.

    python scripts/run_dir_hashes.py OUT_DIR            # writes OUT_DIR/{cached,live}/ and prints hashes

Used to show that a change to how the engine writes its files leaves their bytes as they were:
run it on two checkouts and compare the printed lists (docs/perf/records.md).

The engine runs as a child `python -m trinity train` of *this* checkout (the cwd), started through
this script's `--child` mode, which fixes the clock before the engine is imported:
`time.time` returns a constant (event and trace times, the npz members' zip timestamps), the
modules that measure a duration for a record see constant `monotonic` / `perf_counter` (`secs`,
latencies: `MEASURING`), and the ISO stamps of run.json, the checkpoint manifest and the ledger
are one fixed string. The live run talks to the practice server over loopback HTTP, started here
(its clock fixed too: the journal keeps its Server-Timing), one session at a time
(`concurrency: 1`: with parallel sessions the ledger's order is the order calls come back in).

What is not compared byte for byte (`_norm`): `.lock` (the engine's pid) is skipped; run.json
without `pid` and `git_sha` (this process, this checkout); events.jsonl without the `system`
sample of each generation event (the box's CPU, memory, disk) and with the seconds quoted in log
lines masked (the warm start's encoder progress, timed inside a function). In the live run the
sessions of one generation run concurrently, so the order in which paid calls come back varies
from run to run of the same code: ledger.jsonl is compared as its set of records without their
chain fields (`seq`, `prev_h`, `h`), the journals as their set of lines, and the ledger head in the
checkpoint manifest and summary.json is masked. Everything else — the checkpoint's state files,
history.json, traces.jsonl, best_theta.npy, summary.json, forecast.json, the manifests — is
hashed as written.

    python scripts/run_dir_hashes.py --hash RUN_DIR    # only hash an existing run directory
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

FIXED_T = 1_767_225_600.0  # 2026-01-01T00:00:00Z
FIXED_ISO = "2026-01-01T00:00:00+00:00"
FIXED_ISO_MS = "2026-01-01T00:00:00.000Z"


class _FixedClock:
    """A module's `time` with fixed durations: `monotonic` / `perf_counter` constant, the rest
    the real module's. Put only into the modules that *measure* durations for a record (never
    into asyncio, threading or a wait loop: those need a clock that moves)."""

    def __getattr__(self, name: str) -> object:
        import time

        return getattr(time, name)

    @staticmethod
    def monotonic() -> float:
        return 1000.0

    @staticmethod
    def perf_counter() -> float:
        return 1000.0


# the modules whose monotonic / perf_counter end up in a run file: `secs` of the generation and
# warm-start records, latencies in the journal, the forecast's `secs`, the log lines that quote
# how long an encoding took
MEASURING = (
    "trinity.optim.trainer",
    "trinity.optim.fitness",
    "trinity.optim.warmstart",
    "trinity.optim.plan",
    "trinity.pool.client",
    "trinity.practice.server",
)


def fix_clock() -> None:
    import importlib
    import time

    time.time = lambda: FIXED_T  # event times, trace times, the npz members' zip timestamps
    for name in MEASURING:
        importlib.import_module(name).time = _FixedClock()  # type: ignore[attr-defined]
    import trinity.pool.ledger as ledger
    import trinity.runs.rundir as rundir

    rundir.utc_now_iso = lambda: FIXED_ISO
    ledger.utc_iso_ms = lambda: FIXED_ISO_MS
    for name in ("trinity.optim.checkpoint", "trinity.optim.engine", "trinity.sweep.runner"):
        mod = importlib.import_module(name)
        if hasattr(mod, "utc_now_iso"):
            mod.utc_now_iso = lambda: FIXED_ISO  # type: ignore[attr-defined]


def _child(argv: list[str]) -> int:
    fix_clock()
    from trinity.cli import main

    return main(argv)


_DURATION = re.compile(r", \d+(\.\d+)? s\)")  # "…, 2.4 s)": a log line quoting how long a step took
_CHAIN = ("seq", "prev_h", "h")  # a ledger record's place in the hash chain


def _norm(path: Path) -> bytes:
    """The bytes compared: the file's own, but for the parts that cannot be fixed (module doc)."""
    data = path.read_bytes()
    if path.name == "run.json":
        meta = json.loads(data)
        for k in ("pid", "git_sha"):
            meta.pop(k, None)
        return json.dumps(meta).encode()
    if path.name == "events.jsonl":
        out = []
        for line in data.decode().splitlines():
            ev = json.loads(line)
            ev.pop("system", None)
            if ev.get("type") == "log":
                ev["message"] = _DURATION.sub(", _ s)", ev["message"])
            out.append(json.dumps(ev))
        return "\n".join(out).encode()
    if path.name == "ledger.jsonl":  # the records, in any order, without their chain
        recs = [json.loads(x) for x in data.decode().splitlines()]
        return "\n".join(sorted(json.dumps({k: v for k, v in r.items() if k not in _CHAIN}) for r in recs)).encode()
    if path.name.startswith("journal") and path.suffix == ".jsonl":  # the lines, in any order
        return b"\n".join(sorted(data.splitlines()))
    if path.name in ("manifest.json", "summary.json"):
        doc = json.loads(data)
        if doc.get("ledger_head") is None:
            return data
        doc["ledger_head"] = "(the ledger's head: order of the calls)"
        return json.dumps(doc).encode()
    return data


def hashes(run: Path) -> dict[str, str]:
    out = {}
    for p in sorted(run.rglob("*")):
        if p.is_file() and p.name not in (".lock", "engine.log"):
            out[str(p.relative_to(run))] = hashlib.sha256(_norm(p)).hexdigest()[:16]
    return out


def _train(args: list[str], env: dict[str, str]) -> None:
    r = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", "train", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if r.returncode != 0:
        raise SystemExit(f"train failed ({r.returncode}): {r.stderr[-3000:]}")


def main() -> int:
    out = Path(sys.argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    sys.path[:0] = [str(Path.cwd()), str(Path.cwd() / "tests" / "optim")]
    from optim_standin import synthetic_task

    from trinity.benchmarks.practice import practice_questions
    from trinity.data.matrix import save_matrix
    from trinity.data.questions import save_questions
    from trinity.practice.server import start_practice_server

    env = {**os.environ, "OMP_NUM_THREADS": "1", "XDG_CACHE_HOME": str(out / "cache"), "PYTHONHASHSEED": "0"}
    qs, mat = synthetic_task(n_per_cat=10, seed=0)
    q, m = out / "questions.jsonl", out / "matrix.json"
    save_questions(q, qs)
    save_matrix(m, mat)
    common = ["--encoder", "tiny-qwen3", "--seed", "3", "--json"]
    cached = out / "cached"
    _train(
        ["--mode", "cached", "--questions", str(q), "--matrix", str(m), "--generations", "3"]
        + ["--popsize", "6", "--m", "8", "--run-dir", str(cached), *common],
        env,
    )
    lq = out / "mathmc.jsonl"
    lq.write_text("".join(json.dumps(x.to_json()) + "\n" for x in practice_questions() if x.kind != "code"))
    live = out / "live"
    one = out / "one-session.yaml"
    one.write_text("concurrency: 1\n")
    import importlib

    # the server's Server-Timing header ends up in the journal
    importlib.import_module("trinity.practice.server").time = _FixedClock()  # type: ignore[attr-defined]
    h = start_practice_server(port=0)
    try:
        _train(
            ["--mode", "live", "--pool", "practice", "--questions", str(lq), "--generations", "2"]
            + ["--popsize", "4", "--m", "3", "--run-dir", str(live), "--warm-start", "none"]
            + ["--config", str(one), *common],
            {**env, "TRINITY_POOL_BASE_URL": h.base_url},
        )
    finally:
        h.stop()
    for name, run in (("cached", cached), ("live", live)):
        for rel, digest in hashes(run).items():
            print(f"{name}/{rel} {digest}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--hash":
        for rel, digest in hashes(Path(sys.argv[2])).items():
            print(f"{rel} {digest}")
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(_child(sys.argv[2:]))
    sys.exit(main())
