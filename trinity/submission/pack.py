"""`pack_run`: turn a finished run directory into a submission bundle.

- `minirouter` → `<out>/submissions/final_model/` (replaced as a whole when it holds this run's
  bundle or git has the old one; another run's untracked bundle is never overwritten)
- `tinyrouter` → `<out>/submissions/<miner>/<n>/`, n = the next free number (1, 2, …): free in
  the directory and on every ref of the git repository at `<out>`, if it is one

`<out>` is the root of the competition checkout (default: the current directory), so the bundle
lands where `trinity submit` expects it. A bundle is written into a temporary sibling directory
and renamed into place, so a crash never leaves half a bundle under its final name.

Refusals: a run that is not finished (unless `force`), one without `best_theta.npy`, one whose θ
does not fit the run's pool, one whose ledger does not verify (never overridable), and — for a
competition whose receipt must show a cost (TinyRouter) — a run that made no paid call.

The competition profile (`trinity.competition`) decides what is written: TinyRouter receipts name
the pool by its short names (`constants.py` DEFAULT_POOL_MODELS), say `benchmark: composite`, carry
`fitness_history` rows with `generation`, and the run's ledger is exported next to it in
TinyRouter's `{"m","p","c"}` chain (`runs/<id>/cost_ledger.tinyrouter.jsonl`, for
TRINITY_COST_LEDGER); MiniRouter summaries get `benchmark`, `n_total`, `best_fitness` and `pool`.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trinity import __version__
from trinity.competition.profiles import Profile, get_profile, run_competition
from trinity.errors import InputError
from trinity.io import atomic_write_json, atomic_write_text, read_json
from trinity.model.theta import load_theta, save_bundle_weights
from trinity.pool.ledger import verify_run_ledger
from trinity.runs.records import (
    SUMMARY_FILE,
    GenerationRecord,
    RunMeta,
    Summary,
    read_history,
    read_run_meta,
    read_summary,
)
from trinity.runs.rundir import RunDir
from trinity.submission.bundle import (
    MINIROUTER,
    RECEIPT_FILE,
    THETA_FILE,
    TINYROUTER,
    bundle_files,
    bundle_hash,
    hidden_from_size,
)
from trinity.submission.history import SubmissionHistory
from trinity.submission.ledger_export import export_ledger

if TYPE_CHECKING:
    import numpy as np

    from trinity.submission.ledger_export import LedgerExport

MINER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,38}$")


@dataclass
class Bundle:
    path: Path
    format: str
    miner: str
    run_id: str
    hash: str
    files: list[str]
    receipt: dict[str, Any] | None = None
    competition: str | None = None
    notes: list[str] | None = None

    def describe(self) -> list[str]:
        lines = [
            f"{self.format} bundle {self.path}" + (f" for {self.competition}" if self.competition else ""),
            f"  run {self.run_id}, miner {self.miner}",
            f"  hash {self.hash[:16]}…",
        ]
        lines += [f"  {f}" for f in self.files]
        lines += [f"  {n}" for n in self.notes or []]
        return lines


@dataclass
class LedgerTotals:
    """What the run's verified ledger says (an absent ledger = no paid call)."""

    present: bool
    n_records: int
    total_micro_usd: int
    head_hash: str | None

    @property
    def total_usd(self) -> float:
        return self.total_micro_usd / 1e6


def check_miner(miner: str) -> str:
    if not isinstance(miner, str) or not MINER_RE.match(miner):
        raise InputError(
            f"miner name {miner!r} is not valid; use your GitHub user name (letters, digits, '-', '_', '.')"
        )
    return miner


def verified_ledger(run: RunDir) -> LedgerTotals:
    """Totals of the run's ledger after verifying its hash chain against every head the run
    recorded (summary.json, the checkpoint: `trinity ledger verify RUN_DIR`), so a ledger cut at
    the end, re-chained or deleted is refused; InputError when it is broken or torn."""
    rep = verify_run_ledger(run.path)
    if rep.ok and rep.torn_tail:
        rep.ok, rep.first_bad_line = False, rep.n_records + 1
        rep.problem = f"its last line is a torn write ({rep.torn_bytes} bytes); resume the run once to set it aside"
    if rep.ok and rep.n_records == 0:
        return LedgerTotals(False, 0, 0, None)
    if not rep.ok:
        where = f" at line {rep.first_bad_line}" if rep.first_bad_line else ""
        raise InputError(
            f"ledger {run.ledger} does not verify{where}: {rep.problem}; "
            "a bundle needs an intact cost ledger (check it with `trinity ledger verify`)"
        )
    return LedgerTotals(True, int(rep.n_records), int(rep.total_micro_usd), rep.head_hash)


def run_hidden(meta: RunMeta, summary: Summary | None, size: int, n_models: int) -> int | None:
    """The encoder's hidden width for a run's θ: recorded in run.json / summary.json when the
    trainer says, else the width that makes `size` = (n_models + 3)·hidden + 7·hidden."""
    for h in (meta.hidden, summary.hidden if summary is not None else None):
        if h is not None and 0 < (n_models + 3) * h < size:
            return h
    return hidden_from_size(size, n_models)


def fitness_history(history: list[GenerationRecord] | None) -> list[dict[str, Any]]:
    """The receipt's `fitness_history` from the run's `history.json` generation records."""
    return [
        {
            "generation": rec.gen,
            "mean_fitness": _num(rec.mean),
            "max_fitness": _num(rec.max),
            "best_fitness": _num(rec.best),
        }
        for rec in history or []
    ]


def _num(v: Any) -> float | None:
    """A finite float, or None (JSON has no NaN)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _best_fitness(summary: Summary | None, fh: list[dict[str, Any]]) -> float | None:
    if summary is not None:
        for v in (summary.best_fitness, summary.extra("best")):
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return float(v)
    vals = [r["best_fitness"] for r in fh if r["best_fitness"] is not None]
    return max(vals) if vals else None


def _benchmark_name(meta: RunMeta) -> tuple[str, list[str]]:
    benches = meta.benchmarks or meta.config.benchmarks or []
    return (benches[0] if len(benches) == 1 else "composite"), benches


def _readme(receipt: dict[str, Any]) -> str:
    fh = receipt["fitness_history"]
    rows = "\n".join(
        f"| {r['generation']} | {_fmt(r['mean_fitness'])} | {_fmt(r['max_fitness'])} | {_fmt(r['best_fitness'])} |"
        for r in fh
    )
    best = receipt["best_fitness"]
    return f"""# TinyRouter submission — {receipt["miner"]}

Routing head trained by separable CMA-ES (minertui, {receipt["packed_by"]}).

| | |
|---|---|
| run | `{receipt["run_id"]}` ({receipt["mode"]} fitness) |
| benchmark | {receipt["benchmark"]} ({", ".join(receipt["benchmarks"]) or "all"}) |
| pool | {", ".join(receipt["pool_models"])} |
| encoder | `{receipt["encoder"]}` (hidden {receipt["hidden"]}) |
| parameters | {receipt["n_total"]:,} = head ({receipt["n_models"]} + 3) × {receipt["hidden"]} + SVF {receipt["n_svf"]:,} |
| popsize / m / σ0 / seed | {receipt["popsize"]} / {receipt["m_cma"]} / {receipt["sigma0"]} / {receipt["seed"]} |
| generations | {receipt["generations"]} |
| best fitness | {_fmt(best)} |
| training cost | ${receipt["total_cost_usd"]:.4f} over {receipt["ledger_records"]} ledger records |
| ledger head | `{receipt["ledger_head_hash"]}` |
| packed | {receipt["packed_at"]} |

Files: `head_weights.npy` ({receipt["n_models"] + 3}, {receipt["hidden"]}) float32,
`svf_scales.npy` ({receipt["n_svf"]},) float32, `receipt.json`.

## Fitness by generation

| generation | mean | max | best |
|---|---|---|---|
{rows}
"""


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.4f}"


def _numbers_in_git(root: Path, miner: str) -> set[int]:
    """Bundle numbers of `miner` committed on any ref of the repository at `root` (when it is
    one): a bundle submitted from a branch is not in the main checkout, but its number is taken."""
    if not (root / ".git").exists():
        return set()
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "log", "--all", "--format=", "--name-only", "--", f"submissions/{miner}/"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return set()
    nums = set()
    for line in out.stdout.splitlines():
        parts = line.split("/")
        if len(parts) >= 3 and parts[2].isdigit():
            nums.add(int(parts[2]))
    return nums


# what a minirouter pack writes into final_model/ (eval.json when the run has one)
MINIROUTER_WRITES = frozenset({THETA_FILE, "summary.json", "history.json", "eval.json"})


def _final_model_replaceable(final: Path, run_id: str, root: Path, force: bool = False) -> str:
    """A minirouter pack replaces `submissions/final_model/` as a whole. That is safe when the old
    bundle is this run's (a re-pack) or git holds it unchanged (the checkout's current model);
    another run's bundle that exists only on disk would be lost: refuse. Tracked files the new
    bundle does not write (a README.md) would be deleted: refused too unless `force`. Returns the
    note that says what is replaced ("" when nothing is)."""
    if not final.exists():
        return ""
    try:  # a bundle from elsewhere (the king's) need not be our summary record: its run_id only
        doc = read_json(final / SUMMARY_FILE, SUMMARY_FILE)
    except InputError:
        doc = None
    old_run = doc.get("run_id") if isinstance(doc, dict) and isinstance(doc.get("run_id"), str) else None
    if old_run == run_id:
        return f"replaces this run's earlier bundle in {final}"
    if (root / ".git").exists():
        try:
            rel = final.relative_to(root).as_posix()
            tracked = subprocess.run(
                ["git", "-C", str(root), "ls-files", "--", rel], capture_output=True, text=True, timeout=60
            )
            changed = subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain", "--ignored", "--", rel],
                capture_output=True,
                text=True,
                timeout=60,
            )
            if (
                tracked.returncode == 0
                and changed.returncode == 0
                and tracked.stdout.strip()
                and not changed.stdout.strip()
            ):
                files = [ln[len(rel) + 1 :] for ln in tracked.stdout.splitlines() if ln.startswith(rel + "/")]
                lost = sorted(f for f in files if f not in MINIROUTER_WRITES)
                if lost and not force:
                    raise InputError(
                        f"packing replaces {rel}/ (run {old_run or 'unknown'}, tracked by git) as a whole "
                        f"and would delete {', '.join(lost)}, which the new bundle does not write; pass "
                        "--force to replace it anyway (git keeps the old files)"
                    )
                return f"replaces {rel}/ (run {old_run or 'unknown'}: {len(files)} tracked file(s)" + (
                    f", deleting {', '.join(lost)})" if lost else ")"
                )
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
    raise InputError(
        f"{final} holds another bundle (run {old_run or 'unknown'}) that git does not have; "
        "move it away or commit it first, then pack again"
    )


def _next_number(miner_dir: Path, taken: set[int]) -> int:
    nums = (
        {int(p.name) for p in miner_dir.iterdir() if p.is_dir() and p.name.isdigit()} if miner_dir.is_dir() else set()
    )
    return max(nums | taken, default=0) + 1


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _place(tmp: Path, final: Path, replace: bool) -> None:
    """Rename the finished temp bundle to its final name (replacing a previous one if asked).
    Temp files are private (0600/0700); the bundle gets the usual modes first."""
    mask = _umask()
    os.chmod(tmp, 0o777 & ~mask)
    for p in tmp.iterdir():
        os.chmod(p, 0o666 & ~mask)
    if replace and final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        os.replace(final, old)
        os.replace(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, final)  # fails if `final` appeared meanwhile


def pack_profile(meta: RunMeta, fmt: str | None, competition: str | None = None) -> Profile:
    """The competition a pack is for: `competition` (the --competition flag), else run.json's
    `competition`, else the bundle format's competition, else the default of the run's pool. A
    format that is not that competition's layout is refused."""
    if competition or meta.competition or not fmt:
        prof = run_competition(meta.to_json(), competition)  # the competition layer reads run.json's JSON
    else:
        prof = get_profile(fmt)
    if fmt and fmt != prof.bundle_format:
        raise InputError(
            f"the run is for {prof.title} (run.json `competition`, or --competition), whose "
            f"bundles are --format {prof.bundle_format}, not {fmt}; pass --competition {fmt} "
            "to pack it for the other competition"
        )
    return prof


def pack_run(
    run_dir: str | os.PathLike[str],
    miner: str,
    fmt: str | None,
    out: str | os.PathLike[str] | None = None,
    force: bool = False,
    history: SubmissionHistory | str | os.PathLike[str] | None = None,
    competition: str | None = None,
) -> Bundle:
    """Pack `run_dir` as a `fmt` bundle under `<out>/submissions/`; see the module doc."""
    if fmt is not None and fmt not in (TINYROUTER, MINIROUTER):
        raise InputError(f"unknown bundle format {fmt!r}; use tinyrouter or minirouter")
    check_miner(miner)
    run = RunDir(run_dir)
    meta = read_run_meta(run.path)
    prof = pack_profile(meta, fmt, competition)
    fmt = prof.bundle_format
    status = meta.status
    if status != "finished" and not force:
        raise InputError(
            f"run {run.id} is {status}, not finished; wait for it to finish, or pass --force to pack its best θ so far"
        )
    if not run.best_theta.exists():
        raise InputError(
            f"run {run.id} has no best_theta.npy (no generation finished yet); train it further before packing"
        )

    theta = load_theta(run.best_theta)  # (D,) float64; InputError when corrupt or not finite
    models = meta.models
    if not models:
        raise InputError(f"{run.run_json} has no pool model list (`models`); the run is incomplete")
    history_recs = read_history(run.history) if run.history.exists() else None
    summary = read_summary(run.summary) if run.summary.exists() else None
    hidden = run_hidden(meta, summary, int(theta.size), len(models))
    if hidden is None:
        raise InputError(
            f"{run.best_theta} has {theta.size} values, which does not fit a {len(models)}-model "
            "pool ((n_models + 3)·hidden + 7·hidden); run.json should record `hidden`"
        )
    ledger = verified_ledger(run)
    if prof.ledger_format and ledger.total_micro_usd <= 0:
        raise InputError(
            f"run {run.id} made no paid call (its ledger total is $0: a cached-only run, or every "
            f"answer came from the response cache); {prof.title}'s preflight rejects such a receipt "
            "(receipt_cost_zero_or_missing). Train or evaluate it live first (trinity train --mode "
            "live, or trinity eval --mode live), then pack"
        )

    root = Path(out) if out is not None else Path.cwd()
    subs = root / "submissions"
    notes: list[str] = []
    if fmt == MINIROUTER:
        replaced = _final_model_replaceable(subs / "final_model", run.id, root, force)
        if replaced:
            notes.append(replaced)
    subs.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=subs, prefix=".pack-"))
    receipt: dict[str, Any] | None = None
    try:
        if fmt == MINIROUTER:
            if history_recs is None or summary is None:
                raise InputError(
                    f"run {run.id} has no summary.json/history.json yet; a minirouter "
                    "bundle needs both (let the run finish)"
                )
            shutil.copyfile(run.best_theta, tmp / THETA_FILE)
            atomic_write_json(tmp / "summary.json", _summary(prof, meta, summary, theta, models))
            shutil.copyfile(run.history, tmp / "history.json")
            if run.eval_json.exists():
                shutil.copyfile(run.eval_json, tmp / "eval.json")
            final = subs / "final_model"
            _place(tmp, final, replace=True)
        else:
            receipt = _receipt(prof, run, meta, miner, theta, len(models), hidden, ledger, history_recs, summary)
            export = _export_ledger(prof, run, ledger)
            if export is not None:
                receipt["ledger_export"] = export.to_json()
                notes.append(
                    f"ledger in {prof.title}'s format (for TRINITY_COST_LEDGER): {export.path} "
                    f"({export.n_records} records, ${export.total_usd_at_their_prices:.4f} at "
                    f"{prof.title}'s prices, receipt ${receipt['total_cost_usd']:.4f})"
                )

            # head_weights.npy (n_models+3, hidden) float32, svf_scales.npy (svf_size,) float32
            save_bundle_weights(tmp, theta, len(models), hidden)
            atomic_write_json(tmp / RECEIPT_FILE, receipt)
            atomic_write_text(tmp / "README.md", _readme(receipt))
            miner_dir = subs / miner
            miner_dir.mkdir(parents=True, exist_ok=True)
            taken = _numbers_in_git(root, miner)
            while True:
                final = miner_dir / str(_next_number(miner_dir, taken))
                try:
                    _place(tmp, final, replace=False)
                    break
                except OSError:
                    if not final.exists():
                        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    files = [p.relative_to(final).as_posix() for p in bundle_files(final)]
    bundle = Bundle(
        path=final.resolve(),
        format=fmt,
        miner=miner,
        run_id=run.id,
        hash=bundle_hash(final),
        files=files,
        receipt=receipt,
        competition=prof.name,
        notes=notes,
    )
    hist = history if isinstance(history, SubmissionHistory) else SubmissionHistory.open(history)
    hist.append(
        "pack",
        miner=miner,
        bundle=str(bundle.path),
        bundle_hash=bundle.hash,
        format=fmt,
        run_id=run.id,
        run_dir=str(run.path.resolve()),
        competition=prof.name,
    )
    return bundle


def _export_ledger(prof: Profile, run: RunDir, ledger: LedgerTotals) -> LedgerExport | None:
    """The run's ledger in the competition's format, next to it in the run directory (what a
    maintainer passes as TRINITY_COST_LEDGER); None when the competition has no ledger format."""
    if not prof.ledger_format or not ledger.present:
        return None

    return export_ledger(prof, run.ledger, export_path(prof, run))


def export_path(prof: Profile, run: RunDir) -> Path:
    return run.path / f"cost_ledger.{prof.name}.jsonl"


def _summary(prof: Profile, meta: RunMeta, summary: Summary, theta: np.ndarray, models: list[str]) -> dict[str, Any]:
    """The run's summary.json plus the keys the competition's validator recommends
    (`benchmark`, `n_total`, `best_fitness`, `pool` in the competition's model names)."""
    out = summary.to_json()
    benchmark, _ = _benchmark_name(meta)
    out["benchmark"] = prof.receipt_benchmark or benchmark
    out["n_total"] = int(theta.size)
    out["pool"] = prof.short_names([str(m) for m in models])
    out.setdefault("provider", meta.pool or meta.config.pool)
    out.setdefault("models", [str(m) for m in models])
    out.setdefault("best_fitness", None)
    out["competition"] = prof.name
    return out


def _receipt(
    prof: Profile,
    run: RunDir,
    meta: RunMeta,
    miner: str,
    theta: np.ndarray,
    n_models: int,
    hidden: int,
    ledger: LedgerTotals,
    history_recs: list[GenerationRecord] | None,
    summary: Summary | None,
) -> dict[str, Any]:
    config = meta.config
    fh = fitness_history(history_recs)
    benchmark, benches = _benchmark_name(meta)
    return {
        "miner": miner,
        "run_id": run.id,
        "competition": prof.name,
        "benchmark": prof.receipt_benchmark or benchmark,
        "benchmarks": benches,
        "mode": meta.mode if "mode" in meta.model_fields_set else config.mode,
        "pool": meta.pool if "pool" in meta.model_fields_set else config.pool,
        "pool_models": prof.short_names(meta.models),
        "pool_model_ids": list(meta.models),
        "encoder": meta.encoder if "encoder" in meta.model_fields_set else config.encoder,
        "n_models": n_models,
        "hidden": hidden,
        "n_total": int(theta.size),
        "n_head": (n_models + 3) * hidden,
        "n_svf": int(theta.size) - (n_models + 3) * hidden,
        "popsize": config.popsize,
        "m_cma": config.m,
        "sigma0": config.sigma0,
        "seed": config.seed,
        "generations": len(fh),
        "best_fitness": _best_fitness(summary, fh),
        "fitness_history": fh,
        "total_cost_usd": round(ledger.total_usd, 6),
        "total_cost_micro_usd": ledger.total_micro_usd,
        "ledger_records": ledger.n_records,
        "ledger_head_hash": ledger.head_hash,
        "run_status": meta.status,
        "git_sha": meta.git_sha,
        "packed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "packed_by": f"trinity {__version__}",
    }
