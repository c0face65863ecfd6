"""The submission gates (docs/CONTRACTS.md, Submission), run locally before anything is pushed.

`check_bundle(...) -> GateReport`: one `GateResult(name, status, reason, numbers)` per gate.
Status is `pass`, `fail` or `warn`; `warn` never blocks — it marks a gate that does not apply to
this bundle format or had nothing to compare against, and says so. `GateReport.ok` is True when
no gate failed (that is `trinity check`'s exit 0).

Gates: rate_limit, weight_sanity, duplicate, receipt, ledger, schema, theta_roundtrip (and, for
TinyRouter, frozen_files). Which gates block, under which name the competition knows each, and the
numbers they use (shape, thresholds, windows, pool names) come from the bundle's competition
profile (`trinity.competition`): a gate the competition does not run reports `warn`, never `fail`;
a TinyRouter reason starts with TinyRouter's own reason code (`receipt_pool_models_mismatch: …`),
so `trinity check` fails where their preflight rejects and says why in their words. The
competition's report-only checks (TinyRouter: fitness_history_sequence, ledger_call_volume,
head_routing_diversity) are `GateReport.advisories`: they warn and never block.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, TypeGuard

import numpy as np

from trinity.competition.profiles import Profile, get_profile, run_competition
from trinity.competition.protocol import run_protocol
from trinity.competition.text import HIDDEN
from trinity.competition.text import SVF_PARAMS as N_SVF
from trinity.errors import InputError, TrinityError
from trinity.io import read_json
from trinity.pool.ledger import read_ledger
from trinity.runs.records import read_run_meta
from trinity.runs.rundir import RunDir
from trinity.submission.bundle import (
    MINIROUTER,
    N_ROLES,
    TINYROUTER,
    LoadedBundle,
    find_bundles,
    load_bundle,
)
from trinity.submission.history import SubmissionHistory
from trinity.submission.ledger_export import their_price, verify_mpc_chain
from trinity.submission.pack import verified_ledger
from trinity.submission.pool_config import pool_models_for

PASS, FAIL, WARN = "pass", "fail", "warn"
RATE_WINDOW_S = 24 * 3600  # the defaults when a profile says nothing else
MAX_ABS_WEIGHT = 1e6
DUPLICATE_COSINE = 0.99
LEDGER_TOLERANCE_USD = 0.05
MIN_GENERATIONS = 3
GATES = ("rate_limit", "weight_sanity", "duplicate", "receipt", "ledger", "schema", "theta_roundtrip", "frozen_files")


@dataclass
class GateResult:
    name: str
    status: str
    reason: str
    numbers: dict[str, Any] = field(default_factory=dict)
    theirs: str | None = None  # the competition's name for this gate (None: not one of theirs)


@dataclass
class GateReport:
    bundle: str
    format: str
    bundle_hash: str
    miner: str | None
    run_dir: str | None
    results: list[GateResult]
    competition: str = "tinyrouter"
    advisories: list[GateResult] = field(default_factory=list)

    @property
    def profile(self) -> Profile:
        return get_profile(self.competition)

    @property
    def ok(self) -> bool:
        return all(r.status != FAIL for r in self.results)

    def __iter__(self) -> Iterator[GateResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def failed(self) -> list[GateResult]:
        return [r for r in self.results if r.status == FAIL]

    def statuses(self) -> dict[str, str]:
        return {r.name: r.status for r in self.results}

    def verdict(self) -> str:
        """The outcome in the competition's wording (their preflight / validator's last line)."""
        p = self.profile
        if self.ok:
            return p.verdict_pass
        first = self.failed()[0]
        return p.verdict_fail.format(reason=first.reason.split(";")[0])

    def to_dict(self) -> dict[str, Any]:
        return {
            "bundle": self.bundle,
            "format": self.format,
            "competition": self.competition,
            "bundle_hash": self.bundle_hash,
            "miner": self.miner,
            "run_dir": self.run_dir,
            "ok": self.ok,
            "verdict": self.verdict(),
            "gates": [asdict(r) for r in self.results],
            "advisories": [asdict(r) for r in self.advisories],
        }

    def lines(self) -> list[str]:
        out = [f"{self.profile.title} ({self.format} bundle) {self.bundle} ({self.bundle_hash[:12]})"]
        for r in self.results:
            out.append(f"  {r.status.upper():4}  {r.name:15} {r.reason}")
        for r in self.advisories:
            if r.status == WARN:
                out.append(f"  WARN  {r.name} (advisory, never blocks) — {r.reason}")
        out.append(
            "all gates pass"
            if self.ok
            else f"{len(self.failed())} gate(s) fail: {', '.join(r.name for r in self.failed())}"
        )
        out.append(f"{self.profile.title} would say: {self.verdict()}")
        return out


# ---- the context the gates share ----------------------------------------------------------------


@dataclass
class _Ctx:
    b: LoadedBundle
    miner: str | None
    history: SubmissionHistory
    run: RunDir | None
    run_note: str
    against: list[Path]
    king: Path | None
    pool_models: list[str] | None
    pool_source: str
    now: float
    prof: Profile
    repo_root: Path | None = None  # the competition checkout the bundle sits in

    def leaderboard(self) -> dict[str, Any]:
        """TinyRouter's `leaderboard.json` of the checkout ({} when absent or unreadable, as theirs)."""
        if self.repo_root is None or not (self.repo_root / "leaderboard.json").is_file():
            return {}
        try:
            doc = read_json(self.repo_root / "leaderboard.json", "leaderboard.json")
        except InputError:
            return {}
        return doc if isinstance(doc, dict) else {}


def _pool_names(b: LoadedBundle) -> list[str] | None:
    doc = b.receipt if b.receipt is not None else b.summary or {}
    names = doc.get("pool_models") if b.receipt is not None else doc.get("pool")
    if not (isinstance(names, list) and names and all(isinstance(m, str) for m in names)):
        names = doc.get("models")
    return list(names) if isinstance(names, list) and names and all(isinstance(m, str) for m in names) else None


def _expected_layout(c: _Ctx) -> tuple[int, int, int, str]:
    """(n_models, hidden, svf size, where from): the pool the competition's validator runs —
    TinyRouter: always its 3-model pool; MiniRouter: the pool summary.json names (a known
    validator pool, or as many models as it lists), else its 3-model Chutes pool. Hidden 1024."""
    names = _pool_names(c.b) if c.b.format == MINIROUTER else None  # a receipt's pool is checked by schema
    n = c.prof.expected_n_models(names)
    src = f"{c.prof.title}'s validator pool" if not names else f"the {len(names)}-model pool summary.json names"
    return n, HIDDEN, N_SVF, src


def _repo_root(b: LoadedBundle) -> Path | None:
    """The competition checkout: the folder holding the bundle's `submissions/`."""
    for parent in b.path.resolve().parents:
        if parent.name == "submissions":
            return parent.parent
    return None


def _find_run(
    b: LoadedBundle,
    history: SubmissionHistory,
    run_dir: str | os.PathLike[str] | None,
) -> tuple[RunDir | None, str]:
    if run_dir is not None:
        run = RunDir(run_dir)
        if not run.exists():
            raise InputError(f"--run {run_dir} is not a run directory (no run.json)")
        return run, "given"
    rec = history.pack_record(b.hash)
    if rec is None:
        for r in reversed(history.records()):
            if r.get("kind") == "pack" and r.get("bundle") == str(b.path.resolve()):
                rec = r
                break
    if rec and isinstance(rec.get("run_dir"), str) and RunDir(rec["run_dir"]).exists():
        return RunDir(rec["run_dir"]), "from the pack record in the submission history"
    run_id = (b.receipt or {}).get("run_id") or (b.summary or {}).get("run_id")
    if isinstance(run_id, str) and run_id:
        candidate = RunDir(Path.cwd() / "runs" / run_id)
        if candidate.exists():
            return candidate, "runs/<run_id> under the current directory"
        return None, f"run {run_id} not found (pass --run RUN_DIR)"
    return None, "source run unknown (pass --run RUN_DIR)"


# ---- the gates ----------------------------------------------------------------------------------


def repo_submissions(
    bundle: LoadedBundle, miner: str, now: float, window_s: float = RATE_WINDOW_S
) -> tuple[list[dict[str, Any]], str | None]:
    """Commits of the last `window_s` seconds, on any local or remote-tracking branch of the git
    repository the bundle sits in, that touch the miner's submission area (`submissions/<miner>/`;
    a MiniRouter bundle: its own folder) — so a push made by hand, or from another machine and
    fetched here, counts against the rate limit too. ([{commit, unix, bundle_hash|None}], repo)."""
    try:
        import git  # lazy: GitPython loaded only when used

        repo = git.Repo(bundle.path.resolve(), search_parent_directories=True)
        if repo.working_tree_dir is None:  # a bare repository: no submission area to read
            return [], None
        root = Path(repo.working_tree_dir).resolve()
        rel = bundle.path.resolve().relative_to(root)
    except Exception:  # not in a git repository (or no git): nothing to add
        return [], None
    area = rel.as_posix() if bundle.format == MINIROUTER else f"submissions/{miner}"
    try:
        out = repo.git.log("--all", f"--since={int(now - window_s)}", "--format=%H%x1f%ct%x1f%B%x1e", "--", area)
    except git.GitCommandError:  # an empty repository has no log
        return [], str(root)
    found = []
    for rec in out.split("\x1e"):
        parts = rec.strip().split("\x1f")
        if len(parts) < 3:
            continue
        sha, ct, body = parts[0], float(parts[1]), parts[2]
        marker = "bundle sha256: "
        h = body.split(marker, 1)[1].split()[0] if marker in body else None
        found.append({"commit": sha, "unix": ct, "bundle_hash": h})
    return found, str(root)


def leaderboard_attempts(lb: dict[str, Any], benchmark: str, miner: str, now: float, window_s: float) -> list[float]:
    """Unix times of `miner`'s attempts in `leaderboard.json` `benchmarks[benchmark].attempts`
    (else `.history`) within `window_s`, read as TinyRouter's rate-limit gate reads them
    (timestamps `YYYY-MM-DDTHH:MM:SSZ`; others ignored)."""
    benches = bs if isinstance(bs := lb.get("benchmarks"), dict) else {}
    entry = e if isinstance(e := benches.get(benchmark), dict) else {}
    rows = entry.get("attempts") if "attempts" in entry else entry.get("history")
    out = []
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict) or row.get("miner") != miner or not isinstance(row.get("timestamp"), str):
            continue
        try:
            t = datetime.strptime(row["timestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
        except ValueError:
            continue
        if t > now - window_s:
            out.append(t)
    return out


def gate_rate_limit(c: _Ctx) -> GateResult:
    name, p = "rate_limit", c.prof
    if not p.rate_source:
        return GateResult(name, WARN, f"{p.title} has no rate-limit gate", {"miner": c.miner})
    if not c.miner:
        return GateResult(name, FAIL, "miner unknown; pass --miner NAME", {})
    window = p.rate_window_s
    attempts = [
        r
        for r in c.history.attempts(c.miner)
        if c.now - float(r.get("unix", 0)) < window and r.get("bundle_hash") != c.b.hash
    ]
    commits, repo = repo_submissions(c.b, c.miner, c.now, window)
    known = {r.get("bundle_hash") for r in c.history.attempts(c.miner)}
    # A commit of this very bundle is not a prior attempt; one the history already has is counted once.
    pushed = [
        k
        for k in commits
        if k["bundle_hash"] != c.b.hash and (k["bundle_hash"] is None or k["bundle_hash"] not in known)
    ]
    board = leaderboard_attempts(c.leaderboard(), p.receipt_benchmark or "composite", c.miner, c.now, window)
    nums = {
        "miner": c.miner,
        "attempts_24h": len(attempts) + len(pushed),
        "limit_per_24h": p.rate_max,
        "history": str(c.history.path),
        "history_attempts_24h": len(attempts),
        "repo": repo,
        "repo_commits_24h": len(pushed),
        "leaderboard_attempts_24h": len(board),
    }
    times = [float(r.get("unix", 0)) for r in attempts] + [k["unix"] for k in pushed]
    if len(board) >= p.rate_max:
        # their count: attempts recorded by the maintainer's evaluation in leaderboard.json
        last = max(board)
        nums.update(last_attempt=_iso(last), next_allowed=_iso(last + window))
        return GateResult(
            name,
            FAIL,
            f"rate_limited: {len(board)} submission(s) in the last {window // 86400} days "
            f"(max {p.rate_max}) in leaderboard.json; last at {nums['last_attempt']}, next "
            f"allowed at {nums['next_allowed']}",
            nums,
        )
    if times:
        last = max(times)
        nums["last_attempt"] = _iso(last)
        nums["next_allowed"] = _iso(last + window)
        return GateResult(
            name,
            FAIL,
            f"rate_limited: {c.miner} already submitted at {nums['last_attempt']}; "
            f"next submission allowed at {nums['next_allowed']}",
            nums,
        )
    return GateResult(name, PASS, f"no submission by {c.miner} in the last 24 h (history, git, leaderboard.json)", nums)


def gate_weight_sanity(c: _Ctx) -> GateResult:
    name, b = "weight_sanity", c.b
    n_models, hidden, n_svf, src = _expected_layout(c)
    head_shape, svf_shape = (n_models + N_ROLES, hidden), (n_svf,)
    expected_total = (n_models + N_ROLES) * hidden + n_svf
    nums: dict[str, Any] = {
        "expected_head_shape": list(head_shape),
        "expected_svf_shape": list(svf_shape),
        "expected_total": expected_total,
        "layout_from": src,
    }
    if b.format == MINIROUTER and b.theta is not None and b.theta.ndim == 1:
        nums["theta_size"] = int(b.theta.size)
        if b.theta.size != expected_total:
            # MiniRouter's validator only warns here; its evaluation of this pool cannot load it
            return GateResult(
                name,
                FAIL,
                f"best_theta.npy length {b.theta.size} != expected n_total="
                f"{expected_total} ({src}: (n_models + 3)·1024 + 7168)",
                nums,
            )
    if b.head is None or b.svf is None:
        return GateResult(name, FAIL, "; ".join(b.problems) or "weights missing", nums)
    nums.update(
        head_shape=list(b.head.shape),
        svf_shape=list(b.svf.shape),
        total=int(b.head.size + b.svf.size),
        head_dtype=str(b.head.dtype),
        svf_dtype=str(b.svf.dtype),
    )
    problems = []
    if nums["total"] != expected_total:
        problems.append(f"param_count: got {nums['total']}, expected {expected_total}")
    if tuple(b.head.shape) != head_shape:
        problems.append(f"head_shape: got {tuple(b.head.shape)}, expected {head_shape}")
    if tuple(b.svf.shape) != svf_shape:
        problems.append(f"SVF shape {tuple(b.svf.shape)} != {svf_shape}")
    if b.format == TINYROUTER and (b.head.dtype != np.float32 or b.svf.dtype != np.float32):
        problems.append(f"dtypes {b.head.dtype}/{b.svf.dtype}, expected float32")
    both = np.concatenate([b.head.ravel(), b.svf.ravel()]).astype(np.float64)
    n_nan, n_inf = int(np.isnan(both).sum()), int(np.isinf(both).sum())
    finite = both[np.isfinite(both)]
    nums.update(
        nan=n_nan,
        inf=n_inf,
        max_abs=float(np.abs(finite).max()) if finite.size else None,
        head_nonzero=int(np.count_nonzero(b.head)),
        svf_min=float(np.nanmin(b.svf)) if b.svf.size else None,
    )
    if n_nan:
        problems.append(f"weights_contain_NaN: {n_nan} NaN and {n_inf} Inf values")
    elif n_inf:
        problems.append(f"weights_contain_Inf: {n_nan} NaN and {n_inf} Inf values")
    limit = min(c.prof.max_abs_weight, MAX_ABS_WEIGHT)
    for what, arr in (("head_weights", b.head), ("svf_scales", b.svf)):  # their codes, head first
        a = np.abs(arr[np.isfinite(arr)].astype(np.float64))
        if a.size and a.max() > limit:
            problems.append(f"{what}_exceed_max: max |w| {a.max():.3g} > {limit:g}")
    if nums["head_nonzero"] == 0 or np.allclose(b.head, 0.0):
        problems.append("head_weights_all_zeros: the head is all zeros (an untrained head)")
    if b.svf.size and not np.all(b.svf > 0):
        problems.append(f"{int(np.sum(~(b.svf > 0)))} SVF scales are not positive")
    if problems:
        return GateResult(name, FAIL, "; ".join(problems), nums)
    return GateResult(
        name,
        PASS,
        f"head {head_shape}, SVF {svf_shape}, {nums['total']:,} finite "
        f"parameters, max |w| {nums['max_abs']:.3g} ({src})",
        nums,
    )


def centred_unit_head(head: np.ndarray, n_models: int) -> np.ndarray:
    """The head as a routing fingerprint: each row group (models, roles) mean-centred and
    L2-normalised on its own, then flattened (TinyRouter's `routing_invariant_head`).

    Adding one vector to every row of a group, or scaling a group by α > 0, changes no argmax,
    so two heads that differ only by that are the same router: both are removed before the cosine.
    """
    h = head.astype(np.float64)  # (n_models + 3, hidden)
    parts = []
    for g in (h[:n_models], h[n_models:]):
        g = g - g.mean(axis=0, keepdims=True)
        norm = np.linalg.norm(g)
        parts.append((g / norm if norm > 0 else g).ravel())
    return np.concatenate(parts)


def head_cosine(a: np.ndarray, b: np.ndarray, n_models: int) -> float:
    ua, ub = centred_unit_head(a, n_models), centred_unit_head(b, n_models)
    na, nb = np.linalg.norm(ua), np.linalg.norm(ub)
    if na == 0 or nb == 0:
        return 1.0 if na == nb else 0.0
    return float(np.dot(ua, ub) / (na * nb))


def _leaderboard_kings(c: _Ctx) -> list[Path]:
    """King bundles named by `leaderboard.json` (the composite king, then per-benchmark kings)."""
    if c.repo_root is None:
        return []
    lb = c.leaderboard()
    entries = (
        [lb.get("competition")] + list((lb.get("benchmarks") or {}).values())
        if isinstance(lb.get("benchmarks"), dict)
        else [lb.get("competition")]
    )
    out = []
    for e in entries:
        if (
            isinstance(e, dict)
            and isinstance(e.get("best_miner"), str)
            and e["best_miner"]
            and e["best_miner"] != c.miner
        ):
            d = c.repo_root / "submissions" / e["best_miner"] / str(e.get("best_generation", 0))
            if (d / "head_weights.npy").exists() and d not in out:
                out.append(d)
    return out


def gate_duplicate(c: _Ctx) -> GateResult:
    name, b = "duplicate", c.b
    if b.head is None or b.n_models is None or b.n_models < 1:
        return GateResult(name, FAIL, "no readable head to compare", {})
    if not np.all(np.isfinite(b.head)):  # a NaN cosine compares as neither near nor far
        return GateResult(name, FAIL, "the head has NaN/Inf values: no similarity can be computed", {})
    own = b.path.resolve()
    candidates: dict[Path, str] = {}
    for root in c.against:
        for p in find_bundles(root):
            candidates.setdefault(p.resolve(), "prior")
    for p in c.history.submitted_bundle_dirs():
        if p.is_dir():
            candidates.setdefault(p.resolve(), "history")
    for k in _leaderboard_kings(c):
        candidates[k.resolve()] = "king"
    if c.king is not None:
        candidates[c.king.resolve()] = "king"
    compared, skipped = 0, []
    best: tuple[Path | None, float, str] = (None, -2.0, "")
    for path, origin in sorted(candidates.items()):
        if path == own:
            continue
        try:
            other = load_bundle(path)
        except InputError as e:
            if origin == "king":
                return GateResult(name, FAIL, f"king bundle unreadable: {e}", {})
            skipped.append(f"{path}: {e}")
            continue
        if other.hash == b.hash:
            continue  # the same bundle, packed or listed twice
        if other.head is not None and not np.all(np.isfinite(other.head)):
            if origin == "king":
                return GateResult(name, FAIL, f"king bundle {path} has NaN/Inf in its head", {})
            skipped.append(f"{path}: head has NaN/Inf values")
            continue
        if other.head is None or other.head.shape != b.head.shape:
            if origin == "king":
                return GateResult(
                    name, FAIL, f"king bundle {path} has no head of shape {tuple(b.head.shape)} to compare with", {}
                )
            skipped.append(f"{path}: head shape differs")
            continue
        cos = head_cosine(b.head, other.head, b.n_models)
        compared += 1
        if cos > best[1]:
            best = (path, cos, origin)
    thr, strict = c.prof.duplicate_threshold, c.prof.duplicate_strict
    nums: dict[str, Any] = {
        "compared": compared,
        "skipped": len(skipped),
        "threshold": thr,
        "rule": f"cosine {'>' if strict else '≥'} {thr}",
        "king": str(c.king) if c.king else None,
    }
    if best[0] is not None:
        nums.update(closest=str(best[0]), closest_origin=best[2], max_cosine=round(best[1], 6))
    if compared == 0:
        return GateResult(name, WARN, "no prior bundle or king to compare against", nums)
    if best[0] is not None and (best[1] > thr or (not strict and best[1] >= thr)):
        who = _bundle_label(best[0], best[2])
        return GateResult(
            name,
            FAIL,
            f"duplicate_of_{who}_head_sim_{best[1]:.4f}: routing-invariant head "
            f"cosine {best[1]:.4f} {nums['rule'].split(' ', 1)[1]} with {best[2]} bundle {best[0]}",
            nums,
        )
    return GateResult(
        name, PASS, f"max cosine {best[1]:.4f} ≤ {thr} over {compared} bundle(s) (closest {best[0]})", nums
    )


def _bundle_label(path: Path, origin: str) -> str:
    """`<miner>_gen_<n>` (TinyRouter's wording; `king_` first for the king) of a bundle path."""
    parts = path.parts
    who = f"{parts[-2]}_gen_{parts[-1]}" if len(parts) >= 2 and parts[-1].isdigit() else path.name
    return f"king_{who}" if origin == "king" else who


_NUM = (int, float)
RECEIPT_FIELDS: dict[str, tuple[type, ...]] = {
    "benchmark": (str,),
    "pool_models": (list,),
    "n_total": (int,),
    "popsize": (int,),
    "m_cma": (int,),
    "generations": (int,),
    "best_fitness": _NUM,
    "fitness_history": (list,),
    "total_cost_usd": _NUM,
    "ledger_head_hash": (str, type(None)),
    "seed": (int,),
    "packed_at": (str,),
}
HISTORY_FIELDS = ("generation", "mean_fitness", "max_fitness", "best_fitness")


def _typed(v: object, types: tuple[type, ...]) -> bool:
    return isinstance(v, types) and not isinstance(v, bool)


def _is_int(v: object) -> TypeGuard[int]:
    return _typed(v, (int,))


def _is_num(v: object) -> TypeGuard[int | float]:
    return _typed(v, _NUM)


def gate_receipt(c: _Ctx) -> GateResult:
    name, b = "receipt", c.b
    if b.format == MINIROUTER:
        gens = len(b.history or [])
        nums: dict[str, Any] = {"generations": gens, "min_generations": MIN_GENERATIONS}
        if gens < MIN_GENERATIONS:
            return GateResult(name, FAIL, f"history.json has {gens} generation(s), need ≥ {MIN_GENERATIONS}", nums)
        return GateResult(
            name,
            WARN,
            f"minirouter bundles carry no receipt (cost check does not apply); history.json has {gens} generations",
            nums,
        )
    r = b.receipt
    if r is None:
        return GateResult(name, FAIL, "; ".join(p for p in b.problems if "receipt" in p) or "no receipt", {})
    problems = [
        f"{k} missing"
        if k not in r
        else f"{k} is {type(r[k]).__name__}, expected {'/'.join(t.__name__ for t in types)}"
        for k, types in RECEIPT_FIELDS.items()
        if not _typed(r.get(k), types)
    ]
    fh = h if isinstance(h := r.get("fitness_history"), list) else []
    bad_rows = [
        i
        for i, row in enumerate(fh)
        if not isinstance(row, dict) or not all(_typed(row.get(k), _NUM) for k in HISTORY_FIELDS)
    ]
    if bad_rows:
        problems.append(f"fitness_history rows {bad_rows[:5]} lack numeric {', '.join(HISTORY_FIELDS)}")
    cost = x if _is_num(x := r.get("total_cost_usd")) else None
    nums = {
        "total_cost_usd": cost,
        "fitness_entries": len(fh),
        "generations": r.get("generations"),
        "min_generations": MIN_GENERATIONS,
    }
    if cost is None or not cost > 0:
        problems.insert(
            0,
            f"receipt_cost_zero_or_missing: training cost ${cost or 0:g} is not > 0 (a cached-only "
            "run has no paid calls)",
        )
    elif cost is not None and "ledger_head_hash" in r and r["ledger_head_hash"] is None:
        problems.append("a paid run's receipt needs its ledger_head_hash")
    need = max(c.prof.min_history_rows, MIN_GENERATIONS)
    if len(fh) < need:
        problems.append(
            f"receipt_fitness_history_too_short: need > {need - 1} entries (>= {need} generations), has {len(fh)}"
        )
    if _typed(r.get("generations"), (int,)) and r["generations"] != len(fh):
        problems.append(f"generations {r['generations']} != {len(fh)} fitness entries")
    if problems:
        return GateResult(name, FAIL, "; ".join(problems), nums)
    return GateResult(name, PASS, f"cost ${cost:.4f} > 0, {len(fh)} generations, all fields typed", nums)


def ledger_hashes(path: Path) -> set[str]:
    return {rec.h for rec in read_ledger(path, strict=False)}


def gate_ledger(c: _Ctx) -> GateResult:
    name, b = "ledger", c.b
    if b.format == MINIROUTER:
        return GateResult(name, WARN, "does not apply: minirouter bundles carry no cost receipt", {})
    r = b.receipt or {}
    receipt_total = r.get("total_cost_usd")
    if not _is_num(receipt_total):
        return GateResult(name, FAIL, "receipt has no numeric total_cost_usd", {})
    if c.run is None:
        return GateResult(name, FAIL, f"cannot verify the receipt: {c.run_note}", {"receipt_usd": receipt_total})

    try:
        totals = verified_ledger(c.run)
    except InputError as e:
        return GateResult(name, FAIL, str(e), {"receipt_usd": receipt_total})
    head = r.get("ledger_head_hash")
    in_chain = (
        head is None
        and not totals.present
        or (isinstance(head, str) and totals.present and head in ledger_hashes(c.run.ledger))
    )
    diff = abs(float(receipt_total) - totals.total_usd)
    nums = {
        "receipt_usd": receipt_total,
        "ledger_usd": round(totals.total_usd, 6),
        "diff_usd": round(diff, 6),
        "tolerance_usd": LEDGER_TOLERANCE_USD,
        "ledger_records": totals.n_records,
        "ledger_head": totals.head_hash,
        "receipt_head": head,
        "head_in_chain": in_chain,
        "ledger": str(c.run.ledger),
    }
    problems = []
    if diff > LEDGER_TOLERANCE_USD:
        problems.append(
            f"receipt ${float(receipt_total):.4f} != ledger ${totals.total_usd:.4f} "
            f"(off by ${diff:.4f} > ${LEDGER_TOLERANCE_USD})"
        )
    if not in_chain:
        problems.append(f"receipt ledger head {head} is not a record of the verified ledger")
    export = r.get("ledger_export")
    if c.prof.ledger_format:
        problems += _check_export(c, c.run, export, float(receipt_total), totals.n_records, nums)
    if problems:
        return GateResult(name, FAIL, "; ".join(problems), nums)
    return GateResult(
        name,
        PASS,
        f"receipt ${float(receipt_total):.4f} matches the verified ledger "
        f"(${totals.total_usd:.4f}, {totals.n_records} records)",
        nums,
    )


def _check_export(
    c: _Ctx, run: RunDir, export: object, receipt_usd: float, n_records: int, nums: dict[str, Any]
) -> list[str]:
    """The ledger exported in the competition's format (what a maintainer passes as
    TRINITY_COST_LEDGER): present, chain intact, one line per record, and its total at the
    competition's prices within their tolerance of the receipt (else their gate 5 rejects)."""
    if n_records == 0:
        return []
    if not isinstance(export, dict) or not isinstance(export.get("file"), str):
        return [f"the receipt names no {c.prof.title}-format ledger export (pack it again)"]

    path = run.path / Path(export["file"]).name
    if not path.is_file():
        return [f"ledger export {path} is missing (pack the run again)"]
    ok, n, why = verify_mpc_chain(path)
    nums.update(export=str(path), export_records=n)
    if not ok:
        return [f"ledger_cost_unverifiable: {path} fails {c.prof.title}'s hash chain ({why})"]
    if n != n_records:
        return [f"ledger export {path} has {n} records, our ledger {n_records} (pack the run again)"]
    total = 0.0
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            total += their_price(c.prof, rec["m"], int(rec["p"]), int(rec["c"]))[0]
    delta = abs(receipt_usd - total)
    nums.update(export_usd_at_their_prices=round(total, 6), export_delta_usd=round(delta, 6))
    if delta > c.prof.ledger_tolerance_usd:
        return [
            f"ledger_receipt_cost_mismatch: receipt ${receipt_usd:.4f} vs verified ledger ${total:.4f} "
            f"(delta ${delta:.4f}) — {c.prof.title} prices the ledger's tokens at its own table"
        ]
    return []


def their_schema_problem(p: Profile, r: dict[str, Any]) -> str | None:
    """The first problem TinyRouter's pack-schema gate finds in a receipt (their order and codes)."""
    if not r:
        return "receipt_missing"
    for k in p.receipt_required:
        if k not in r:
            return f"receipt_missing_field: {k}"
    bench = r.get("benchmark")
    if not isinstance(bench, str) or not bench.strip():
        return "receipt_benchmark_invalid"
    if p.receipt_benchmark and bench != p.receipt_benchmark:
        return f"receipt_benchmark_mismatch: receipt {bench!r} != expected {p.receipt_benchmark!r}"
    n_total = r.get("n_total")
    if not _is_int(n_total) or n_total <= 0:
        return "receipt_n_total_invalid"
    if n_total != p.expected_theta_length():
        return f"receipt_n_total_mismatch: got {n_total}, expected {p.expected_theta_length()}"
    pool = r.get("pool_models")
    if not isinstance(pool, list) or not pool or not all(isinstance(m, str) and m.strip() for m in pool):
        return "receipt_pool_models_invalid"
    expected = set(next(iter(p.validator_pools.values())))
    if set(pool) != expected:
        return (
            f"receipt_pool_models_mismatch: missing={sorted(expected - set(pool))} extra={sorted(set(pool) - expected)}"
        )
    if not _typed(r.get("generations"), (int,)) or r["generations"] < 1:
        return "receipt_generations_invalid"
    fh = r.get("fitness_history")
    if not isinstance(fh, list) or not fh:
        return "receipt_fitness_history_invalid"
    if not _typed(r.get("total_cost_usd"), _NUM) or float(r["total_cost_usd"]) <= 0:
        return "receipt_total_cost_invalid"
    for i, row in enumerate(fh):
        if not isinstance(row, dict):
            return f"receipt_fitness_history_entry_not_object: index {i}"
        if p.history_row_key not in row:
            return f"receipt_fitness_history_missing_{p.history_row_key}: index {i}"
    return None


def gate_schema(c: _Ctx) -> GateResult:
    name, b, p = "schema", c.b, c.prof
    doc = b.receipt if b.format == TINYROUTER else b.summary
    claimed = _pool_names(b)
    configured = p.short_names(c.pool_models) if c.pool_models else None
    nums: dict[str, Any] = {
        "receipt_pool": claimed,
        "configured_pool": configured,
        "configured_pool_ids": c.pool_models,
        "configured_from": c.pool_source,
    }
    problems = []
    if b.format == MINIROUTER:
        summary = doc or {}
        missing = [k for k in p.summary_recommended if k not in summary]
        nums["summary_missing"] = missing
        if missing:
            problems.append(f"summary.json missing recommended keys: {', '.join(missing)}")
        if "n_total" in summary and b.theta is not None and summary.get("n_total") != int(b.theta.size):
            problems.append(
                f"summary.json n_total={summary.get('n_total')} disagrees with best_theta.npy length={b.theta.size}"
            )
    else:
        theirs = their_schema_problem(p, doc or {})
        if theirs:
            problems.append(theirs)
    if claimed is None:
        if b.format == MINIROUTER:
            problems.append("summary.json names no pool")
            return GateResult(name, FAIL, "; ".join(problems), nums)
        return GateResult(name, FAIL, "; ".join(problems) or "receipt has no pool_models list of model ids", nums)
    if configured is None:
        problems.append(f"no configured pool to compare with ({c.pool_source})")
    elif list(claimed) != list(configured) and not (b.format == MINIROUTER and list(claimed) == c.pool_models):
        problems.append(
            f"bundle pool {claimed} != configured pool {configured} (order matters: "
            "it is the order of the head's model rows)"
        )
    if b.head is not None and b.head.ndim == 2 and b.head.shape[0] != len(claimed) + N_ROLES:
        problems.append(f"head has {b.head.shape[0]} rows, the pool needs {len(claimed)} + 3")
    if b.format == TINYROUTER:
        n_total = (doc or {}).get("n_total")
        actual = int(b.head.size + b.svf.size) if b.head is not None and b.svf is not None else None
        nums.update(n_total=n_total, actual_total=actual, expected_total=p.expected_theta_length())
        if n_total != actual:
            problems.append(f"n_total {n_total} != {actual} stored parameters")
    if problems:
        return GateResult(name, FAIL, "; ".join(problems), nums)
    return GateResult(name, PASS, f"pool {claimed} matches the configured pool ({c.pool_source})", nums)


def gate_theta_roundtrip(c: _Ctx) -> GateResult:
    name, b = "theta_roundtrip", c.b
    joined = b.joined_theta()
    if joined is None:
        return GateResult(name, FAIL, "the bundle's weights could not be read", {})
    if c.run is None:
        return GateResult(name, FAIL, f"no run θ to compare with: {c.run_note}", {})
    if not c.run.best_theta.exists():
        return GateResult(name, FAIL, f"{c.run.best_theta} is missing", {})
    try:
        ref = np.load(c.run.best_theta, allow_pickle=False).astype(np.float64).ravel()
    except (ValueError, OSError, EOFError) as e:
        return GateResult(name, FAIL, f"{c.run.best_theta} is not a readable .npy ({e})", {})
    nums: dict[str, Any] = {
        "bundle_size": int(joined.size),
        "run_size": int(ref.size),
        "run_theta": str(c.run.best_theta),
    }
    if ref.size != joined.size:
        return GateResult(name, FAIL, f"unpacked θ has {joined.size} values, the run's {ref.size}", nums)
    # float32 storage: |x32 − x| ≤ 2⁻²⁴·|x|; allow a little more.
    err = np.abs(joined - ref)
    nums.update(max_abs_diff=float(err.max()), max_rel_diff=float((err / np.maximum(np.abs(ref), 1e-30)).max()))
    if not np.allclose(joined, ref, rtol=1e-6, atol=1e-9, equal_nan=False):
        return GateResult(
            name,
            FAIL,
            f"unpacked θ differs from the run's best θ (max |Δ| "
            f"{nums['max_abs_diff']:.3g}): the bundle is not this run's head, or the run trained further "
            "after packing (pack it again)",
            nums,
        )
    return GateResult(
        name, PASS, f"unpack reproduces the run's best θ (max |Δ| {nums['max_abs_diff']:.2g}, within float32)", nums
    )


def _git_lines(root: Path, *args: str) -> list[str] | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return [ln for ln in out.stdout.splitlines() if ln.strip()] if out.returncode == 0 else None


def gate_frozen_files(c: _Ctx) -> GateResult:
    """Files COMPETITION_RULES.md freezes must not change in a submission PR: the checkout's
    commits since the base (`upstream/main`, else `origin/main`, else `main`) and its uncommitted
    changes are compared with the frozen list."""
    name, p = "frozen_files", c.prof
    if not p.frozen_files:
        return GateResult(name, WARN, f"{p.title} lists no frozen files", {})
    root = c.repo_root
    if root is None or not (root / ".git").exists():
        return GateResult(
            name,
            WARN,
            "the bundle is not in a git checkout of the competition: no diff to check",
            {"frozen": list(p.frozen_files)},
        )
    base = next(
        (
            ref
            for ref in ("refs/remotes/upstream/main", "refs/remotes/origin/main", "refs/heads/main")
            if _git_lines(root, "rev-parse", "-q", "--verify", ref) is not None
        ),
        None,
    )
    changed = set(_git_lines(root, "diff", "--name-only", f"{base}...HEAD") or []) if base else set()
    for ln in _git_lines(root, "status", "--porcelain=v1", "--untracked-files=no") or []:
        changed.add(ln[3:].split(" -> ")[-1].strip('"'))
    hit = sorted(f for f in changed if any(fnmatch.fnmatchcase(f, pat) for pat in p.frozen_files))
    nums = {"base": base, "changed": len(changed), "frozen": list(p.frozen_files), "touched": hit}
    if hit:
        return GateResult(
            name,
            FAIL,
            f"frozen files changed: {', '.join(hit[:5])} — COMPETITION_RULES.md: "
            "modifying frozen files in a submission PR is rejected by the maintainer; revert them",
            nums,
        )
    return GateResult(
        name, PASS, f"no frozen file changed ({len(changed)} changed file(s) since {base or 'no base ref'})", nums
    )


# ---- advisories (report-only, never block) -------------------------------------------------------


def advisory_fitness_history_sequence(c: _Ctx) -> str | None:
    """Generations in order, once each, consecutive; a row's mean ≤ its max; best never drops."""
    rows = (c.b.receipt or {}).get("fitness_history")
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        return None
    gens = [r.get("generation") for r in rows]
    if all(_typed(g, _NUM) and float(g).is_integer() for g in gens):
        ints = [int(g) for g in gens]
        dups = sorted({g for g in ints if ints.count(g) > 1})
        if dups:
            return f"receipt_fitness_history_duplicate_generation: {dups}"
        if ints != sorted(ints):
            return "receipt_fitness_history_generations_out_of_order"
        if ints[-1] - ints[0] != len(ints) - 1:
            return f"receipt_fitness_history_generations_not_consecutive: {len(ints)} rows span {ints[0]}..{ints[-1]}"
    for r in rows:
        mean, peak = r.get("mean_fitness"), r.get("max_fitness")
        if _typed(mean, _NUM) and _typed(peak, _NUM) and mean > peak + 1e-9:
            return f"receipt_fitness_row_mean_exceeds_max: generation {r.get('generation')} mean {mean:.4f} > max {peak:.4f}"
    bests = [r.get("best_fitness") for r in rows]
    if len(bests) >= 2 and all(_typed(v, _NUM) for v in bests):
        for i in range(1, len(bests)):
            if bests[i] < bests[i - 1] - 1e-9:
                return (
                    f"receipt_fitness_best_decreased: generation {rows[i].get('generation')} best "
                    f"{bests[i]:.4f} < {bests[i - 1]:.4f}"
                )
    return None


def advisory_ledger_call_volume(c: _Ctx) -> str | None:
    """Fewer ledger records than generations × popsize, or traffic to one model only."""
    r = c.b.receipt or {}
    if c.run is None or not c.run.ledger.exists():
        return None
    recs = read_ledger(c.run.ledger, strict=False)
    if not recs:
        return "ledger_has_no_entries for the claimed training run"
    gens, pop = r.get("generations"), r.get("popsize")
    expected = gens * pop if _is_int(gens) and _is_int(pop) else 0
    if expected > 0 and len(recs) < expected:
        return (
            f"ledger_call_volume_low: {len(recs)} ledger row(s) for a claimed {gens} x {pop} = {expected} "
            "evaluations (informational only)"
        )
    models = {x.model for x in recs}
    if len(models) < 2:
        return f"ledger_single_model_traffic: only {sorted(map(str, models))} seen (informational only)"
    return None


def advisory_head_routing_diversity(c: _Ctx) -> str | None:
    """The model rows are (near) equal: every question goes to the same model."""
    h, n = c.b.head, c.b.n_models
    if h is None or h.ndim != 2 or not n or not np.all(np.isfinite(h)):
        return None
    agent = h[:n].astype(np.float64)
    scale = float(np.linalg.norm(agent, axis=1).mean())
    if scale <= 0:
        return None
    spread = float(np.linalg.norm(agent - agent.mean(axis=0, keepdims=True), axis=1).max())
    if spread / scale < 1e-3:
        return (
            f"head_agent_rows_collapsed: agent-row spread is {spread / scale:.2e} of the row scale "
            "(< 0.001); this head routes to one model for every query (informational only)"
        )
    return None


ADVISORY_FUNCS: dict[str, Callable[[_Ctx], str | None]] = {
    "fitness_history_sequence": advisory_fitness_history_sequence,
    "ledger_call_volume": advisory_ledger_call_volume,
    "head_routing_diversity": advisory_head_routing_diversity,
}

GATE_FUNCS: dict[str, Callable[[_Ctx], GateResult]] = {
    "rate_limit": gate_rate_limit,
    "weight_sanity": gate_weight_sanity,
    "duplicate": gate_duplicate,
    "receipt": gate_receipt,
    "ledger": gate_ledger,
    "schema": gate_schema,
    "theta_roundtrip": gate_theta_roundtrip,
    "frozen_files": gate_frozen_files,
}


def _run_gates(c: _Ctx) -> list[GateResult]:
    """The profile's gates in its order; a failing gate the competition does not block on is a WARN."""
    out = []
    for spec in c.prof.gates:
        r = GATE_FUNCS[spec.name](c)
        r.theirs = spec.theirs
        if r.status == FAIL and not spec.blocking:
            r.status = WARN
            r.reason = f"{r.reason} (advisory: {c.prof.title} does not reject on this)"
        out.append(r)
    return out


def _run_advisories(c: _Ctx) -> list[GateResult]:
    out = []
    for name in c.prof.advisories:
        why = ADVISORY_FUNCS[name](c)
        out.append(GateResult(name, WARN, why, {}, name) if why else GateResult(name, PASS, "consistent", {}, name))
    if c.run is not None:  # ours, report-only: which session protocol the head was trained under
        trained = run_protocol(c.run.meta().to_json()).name
        if trained != c.prof.name:
            why = (
                f"the run was trained under the {trained} session protocol, not {c.prof.title}'s (role prompts, "
                f"transcript, stop rule, decoding); its validator replays the head under its own — train with "
                f"--competition {c.prof.name}"
            )
            out.append(GateResult("session_protocol", WARN, why, {"trained_under": trained}))
        else:
            out.append(GateResult("session_protocol", PASS, f"trained under {c.prof.title}'s protocol", {}))
    return out


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")


def _configured_pool(
    explicit: list[str] | None,
    b: LoadedBundle,
    run: RunDir | None,
) -> tuple[list[str] | None, str]:
    if explicit:
        return list(explicit), "given"

    name = (b.receipt or b.summary or {}).get("pool")  # the bundle's own record (the competition's schema)
    meta = read_run_meta(run.path) if run is not None else None
    if meta is not None:
        name = meta.pool or name
    if isinstance(name, str) and name:
        models, where = pool_models_for(name)
        if models:
            return models, where
    if run is not None and meta is not None and meta.models:
        return list(meta.models), f"run.json of {run.id}"
    return None, "no --pool-models, no configs/models.yaml pool and no source run"


def check_bundle(
    bundle_dir: str | os.PathLike[str],
    against: Sequence[str | os.PathLike[str]] | str | os.PathLike[str] | None = None,
    king: str | os.PathLike[str] | None = None,
    history: SubmissionHistory | str | os.PathLike[str] | None = None,
    *,
    miner: str | None = None,
    run_dir: str | os.PathLike[str] | None = None,
    pool_models: list[str] | None = None,
    now: float | None = None,
    competition: str | None = None,
) -> GateReport:
    """Run every gate on `bundle_dir`. `against`: directories of prior bundles (searched
    recursively); `king`: the current king's bundle; `history`: the submission history (its
    submitted bundles count as priors, its attempts feed the rate limit)."""
    b = load_bundle(bundle_dir)
    hist = history if isinstance(history, SubmissionHistory) else SubmissionHistory.open(history)
    if against is None:
        roots: list[Path] = []
    elif isinstance(against, (str, os.PathLike)):
        roots = [Path(against)]
    else:
        roots = [Path(a) for a in against]
    king_path = Path(king) if king is not None else None
    if king_path is not None and not king_path.is_dir():
        raise InputError(f"king bundle not found: {king_path}")
    run, note = _find_run(b, hist, run_dir)
    prof = bundle_profile(b, run, competition)
    pool, pool_src = _configured_pool(pool_models, b, run)
    ctx = _Ctx(
        b=b,
        miner=miner or b.miner,
        history=hist,
        run=run,
        run_note=note,
        against=roots,
        king=king_path,
        pool_models=pool,
        pool_source=pool_src,
        now=time.time() if now is None else now,
        prof=prof,
        repo_root=_repo_root(b),
    )
    return GateReport(
        bundle=str(b.path),
        format=b.format,
        bundle_hash=b.hash,
        miner=ctx.miner,
        run_dir=str(run.path) if run else None,
        results=_run_gates(ctx),
        competition=prof.name,
        advisories=_run_advisories(ctx),
    )


def bundle_profile(b: LoadedBundle, run: RunDir | None, competition: str | None = None) -> Profile:
    """The competition a bundle is checked for: --competition, else the bundle's own record
    (receipt / summary `competition`), else its run's, else the one whose layout it has."""
    if competition:
        prof = get_profile(competition)
    else:
        doc = b.receipt or b.summary or {}
        name = doc.get("competition") if isinstance(doc.get("competition"), str) else None
        if name is None and run is not None:
            try:
                meta = read_run_meta(run.path)
            except TrinityError:
                meta = None
            name = run_competition(meta.to_json()).name if meta is not None and meta.competition else None
        prof = get_profile(name or b.format)
    if prof.bundle_format != b.format:
        raise InputError(
            f"{b.path} is a {b.format} bundle; {prof.title} takes {prof.bundle_format} bundles "
            f"(pass --competition {b.format}, or pack the run with --format {prof.bundle_format})"
        )
    return prof
