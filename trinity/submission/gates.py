"""The submission gates (DESIGN §10), run locally before anything is pushed.

`check_bundle(...) -> GateReport`: one `GateResult(name, status, reason, numbers)` per gate.
Status is `pass`, `fail` or `warn`; `warn` never blocks — it marks a gate that does not apply to
this bundle format or had nothing to compare against, and says so. `GateReport.ok` is True when
no gate failed (that is `trinity check`'s exit 0).

Gates: rate_limit, weight_sanity, duplicate, receipt, ledger, schema, theta_roundtrip.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

from trinity.errors import InputError
from trinity.io import read_jsonl
from trinity.runs.rundir import RunDir
from trinity.submission.bundle import (
    MINIROUTER, N_ROLES, N_SVF_MATRICES, TINYROUTER, LoadedBundle, find_bundles, hidden_from_size,
    load_bundle,
)
from trinity.submission.history import SubmissionHistory

PASS, FAIL, WARN = "pass", "fail", "warn"
RATE_WINDOW_S = 24 * 3600
MAX_ABS_WEIGHT = 1e6
DUPLICATE_COSINE = 0.99
LEDGER_TOLERANCE_USD = 0.05
MIN_GENERATIONS = 3
COMPETITION_LAYOUT = (3, 1024)  # (n_models, hidden) of the competition's pool and encoder
GATES = ("rate_limit", "weight_sanity", "duplicate", "receipt", "ledger", "schema", "theta_roundtrip")


@dataclass
class GateResult:
    name: str
    status: str
    reason: str
    numbers: dict[str, Any] = field(default_factory=dict)


@dataclass
class GateReport:
    bundle: str
    format: str
    bundle_hash: str
    miner: str | None
    run_dir: str | None
    results: list[GateResult]

    @property
    def ok(self) -> bool:
        return all(r.status != FAIL for r in self.results)

    def __iter__(self):
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def failed(self) -> list[GateResult]:
        return [r for r in self.results if r.status == FAIL]

    def statuses(self) -> dict[str, str]:
        return {r.name: r.status for r in self.results}

    def to_dict(self) -> dict[str, Any]:
        return {"bundle": self.bundle, "format": self.format, "bundle_hash": self.bundle_hash,
                "miner": self.miner, "run_dir": self.run_dir, "ok": self.ok,
                "gates": [asdict(r) for r in self.results]}

    def lines(self) -> list[str]:
        out = [f"{self.format} bundle {self.bundle} ({self.bundle_hash[:12]})"]
        for r in self.results:
            out.append(f"  {r.status.upper():4}  {r.name:15} {r.reason}")
        out.append("all gates pass" if self.ok else
                   f"{len(self.failed())} gate(s) fail: {', '.join(r.name for r in self.failed())}")
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


def _expected_layout(b: LoadedBundle) -> tuple[int, int, int, str]:
    """(n_models, hidden, svf size, where from): what the receipt (or summary.json) declares,
    else the competition's 3 models × 1024 with 7·1024 SVF scales."""
    r = b.receipt or b.summary or {}
    models = r.get("pool_models") or r.get("models")
    hidden = r.get("hidden")
    if isinstance(models, list) and models and hidden is None and _typed(r.get("n_params"), (int,)):
        hidden = hidden_from_size(r["n_params"], len(models))  # summary.json: no hidden, but n_params
    if isinstance(models, list) and models and _typed(hidden, (int,)) and hidden > 0:
        n_svf = r.get("n_svf")
        if not (_typed(n_svf, (int,)) and n_svf > 0):
            n_svf = N_SVF_MATRICES * hidden
        return len(models), hidden, n_svf, "receipt" if b.receipt else "summary.json"
    n, h = COMPETITION_LAYOUT
    return n, h, N_SVF_MATRICES * h, "competition default"


def _find_run(b: LoadedBundle, history: SubmissionHistory, run_dir: str | os.PathLike | None,
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

def repo_submissions(bundle: LoadedBundle, miner: str, now: float, window_s: float = RATE_WINDOW_S
                     ) -> tuple[list[dict[str, Any]], str | None]:
    """Commits of the last `window_s` seconds, on any local or remote-tracking branch of the git
    repository the bundle sits in, that touch the miner's submission area (`submissions/<miner>/`;
    a MiniRouter bundle: its own folder) — so a push made by hand, or from another machine and
    fetched here, counts against the rate limit too. ([{commit, unix, bundle_hash|None}], repo)."""
    try:
        import git

        repo = git.Repo(bundle.path.resolve(), search_parent_directories=True)
        root = Path(repo.working_tree_dir).resolve()
        rel = bundle.path.resolve().relative_to(root)
    except Exception:  # not in a git repository (or no git): nothing to add
        return [], None
    area = rel.as_posix() if bundle.format == MINIROUTER else f"submissions/{miner}"
    try:
        out = repo.git.log("--all", f"--since={int(now - window_s)}", "--format=%H%x1f%ct%x1f%B%x1e",
                           "--", area)
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


def gate_rate_limit(c: _Ctx) -> GateResult:
    name = "rate_limit"
    if not c.miner:
        return GateResult(name, FAIL, "miner unknown; pass --miner NAME", {})
    attempts = [r for r in c.history.attempts(c.miner)
                if c.now - float(r.get("unix", 0)) < RATE_WINDOW_S and r.get("bundle_hash") != c.b.hash]
    commits, repo = repo_submissions(c.b, c.miner, c.now)
    known = {r.get("bundle_hash") for r in c.history.attempts(c.miner)}
    # A commit of this very bundle is not a prior attempt; one the history already has is counted once.
    pushed = [k for k in commits if k["bundle_hash"] != c.b.hash and (k["bundle_hash"] is None or k["bundle_hash"] not in known)]
    nums = {"miner": c.miner, "attempts_24h": len(attempts) + len(pushed), "limit_per_24h": 1,
            "history": str(c.history.path), "history_attempts_24h": len(attempts),
            "repo": repo, "repo_commits_24h": len(pushed)}
    attempts = attempts + pushed
    if attempts:
        last = max(float(r.get("unix", 0)) for r in attempts)
        nums["last_attempt"] = _iso(last)
        nums["next_allowed"] = _iso(last + RATE_WINDOW_S)
        return GateResult(name, FAIL, f"{c.miner} already submitted at {nums['last_attempt']}; "
                          f"next submission allowed at {nums['next_allowed']}", nums)
    return GateResult(name, PASS, f"no submission by {c.miner} in the last 24 h", nums)


def gate_weight_sanity(c: _Ctx) -> GateResult:
    name, b = "weight_sanity", c.b
    n_models, hidden, n_svf, src = _expected_layout(b)
    head_shape, svf_shape = (n_models + N_ROLES, hidden), (n_svf,)
    nums: dict[str, Any] = {"expected_head_shape": list(head_shape), "expected_svf_shape": list(svf_shape),
                            "expected_total": (n_models + N_ROLES) * hidden + n_svf, "layout_from": src,
                            "competition_layout": (n_models, hidden, n_svf) == (3, 1024, 7168)}
    if b.head is None or b.svf is None:
        return GateResult(name, FAIL, "; ".join(b.problems) or "weights missing", nums)
    nums.update(head_shape=list(b.head.shape), svf_shape=list(b.svf.shape),
                total=int(b.head.size + b.svf.size), head_dtype=str(b.head.dtype), svf_dtype=str(b.svf.dtype))
    problems = []
    if tuple(b.head.shape) != head_shape:
        problems.append(f"head shape {tuple(b.head.shape)} != {head_shape}")
    if tuple(b.svf.shape) != svf_shape:
        problems.append(f"SVF shape {tuple(b.svf.shape)} != {svf_shape}")
    if nums["total"] != nums["expected_total"]:
        problems.append(f"{nums['total']} parameters != {nums['expected_total']}")
    if b.format == TINYROUTER and (b.head.dtype != np.float32 or b.svf.dtype != np.float32):
        problems.append(f"dtypes {b.head.dtype}/{b.svf.dtype}, expected float32")
    both = np.concatenate([b.head.ravel(), b.svf.ravel()]).astype(np.float64)
    n_nan, n_inf = int(np.isnan(both).sum()), int(np.isinf(both).sum())
    finite = both[np.isfinite(both)]
    nums.update(nan=n_nan, inf=n_inf, max_abs=float(np.abs(finite).max()) if finite.size else None,
                head_nonzero=int(np.count_nonzero(b.head)),
                svf_min=float(np.nanmin(b.svf)) if b.svf.size else None)
    if n_nan or n_inf:
        problems.append(f"{n_nan} NaN and {n_inf} Inf values")
    if nums["max_abs"] is not None and nums["max_abs"] > MAX_ABS_WEIGHT:
        problems.append(f"max |w| {nums['max_abs']:.3g} > {MAX_ABS_WEIGHT:g}")
    if nums["head_nonzero"] == 0:
        problems.append("the head is all zeros (an untrained head)")
    if b.svf.size and not np.all(b.svf > 0):
        problems.append(f"{int(np.sum(~(b.svf > 0)))} SVF scales are not positive")
    if problems:
        return GateResult(name, FAIL, "; ".join(problems), nums)
    return GateResult(name, PASS, f"head {head_shape}, SVF {svf_shape}, {nums['total']:,} finite "
                      f"parameters, max |w| {nums['max_abs']:.3g}", nums)


def centred_unit_head(head: np.ndarray, n_models: int) -> np.ndarray:
    """The head with each row group (models, roles) mean-centred, flattened, L2-normalised.

    Adding one vector to every row of a group changes no argmax, so two heads that differ only by
    that are the same router: centring removes it before the cosine.
    """
    h = head.astype(np.float64)                                   # (n_models + 3, hidden)
    groups = [h[:n_models], h[n_models:]]
    flat = np.concatenate([(g - g.mean(axis=0, keepdims=True)).ravel() for g in groups])
    norm = np.linalg.norm(flat)
    return flat / norm if norm > 0 else flat


def head_cosine(a: np.ndarray, b: np.ndarray, n_models: int) -> float:
    ua, ub = centred_unit_head(a, n_models), centred_unit_head(b, n_models)
    if not ua.any() or not ub.any():
        return 1.0 if not ua.any() and not ub.any() else 0.0
    return float(np.dot(ua, ub))


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
    if c.king is not None:
        candidates[c.king.resolve()] = "king"
    compared, skipped, best = 0, [], (None, -2.0, "")
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
                return GateResult(name, FAIL, f"king bundle {path} has no head of shape "
                                  f"{tuple(b.head.shape)} to compare with", {})
            skipped.append(f"{path}: head shape differs")
            continue
        cos = head_cosine(b.head, other.head, b.n_models)
        compared += 1
        if cos > best[1]:
            best = (path, cos, origin)
    nums: dict[str, Any] = {"compared": compared, "skipped": len(skipped), "threshold": DUPLICATE_COSINE,
                            "king": str(c.king) if c.king else None}
    if best[0] is not None:
        nums.update(closest=str(best[0]), closest_origin=best[2], max_cosine=round(best[1], 6))
    if compared == 0:
        return GateResult(name, WARN, "no prior bundle or king to compare against", nums)
    if best[1] >= DUPLICATE_COSINE:
        return GateResult(name, FAIL, f"cosine {best[1]:.4f} ≥ {DUPLICATE_COSINE} with {best[2]} bundle "
                          f"{best[0]}: a near-duplicate head", nums)
    return GateResult(name, PASS, f"max cosine {best[1]:.4f} < {DUPLICATE_COSINE} over {compared} "
                      f"bundle(s) (closest {best[0]})", nums)


_NUM = (int, float)
RECEIPT_FIELDS: dict[str, tuple[type, ...]] = {
    "benchmark": (str,), "pool_models": (list,), "n_total": (int,), "popsize": (int,),
    "m_cma": (int,), "generations": (int,), "best_fitness": _NUM, "fitness_history": (list,),
    "total_cost_usd": _NUM, "ledger_head_hash": (str, type(None)), "seed": (int,), "packed_at": (str,),
}
HISTORY_FIELDS = ("generation", "mean_fitness", "max_fitness", "best_fitness")


def _typed(v: Any, types: tuple[type, ...]) -> bool:
    return isinstance(v, types) and not isinstance(v, bool)


def gate_receipt(c: _Ctx) -> GateResult:
    name, b = "receipt", c.b
    if b.format == MINIROUTER:
        gens = len(b.history or [])
        nums = {"generations": gens, "min_generations": MIN_GENERATIONS}
        if gens < MIN_GENERATIONS:
            return GateResult(name, FAIL, f"history.json has {gens} generation(s), need ≥ {MIN_GENERATIONS}", nums)
        return GateResult(name, WARN, f"minirouter bundles carry no receipt (cost check does not apply); "
                          f"history.json has {gens} generations", nums)
    r = b.receipt
    if r is None:
        return GateResult(name, FAIL, "; ".join(p for p in b.problems if "receipt" in p) or "no receipt", {})
    problems = [f"{k} missing" if k not in r else f"{k} is {type(r[k]).__name__}, expected "
                f"{'/'.join(t.__name__ for t in types)}"
                for k, types in RECEIPT_FIELDS.items() if not _typed(r.get(k), types)]
    fh = r.get("fitness_history") if isinstance(r.get("fitness_history"), list) else []
    bad_rows = [i for i, row in enumerate(fh) if not isinstance(row, dict)
                or not all(_typed(row.get(k), _NUM) for k in HISTORY_FIELDS)]
    if bad_rows:
        problems.append(f"fitness_history rows {bad_rows[:5]} lack numeric {', '.join(HISTORY_FIELDS)}")
    cost = r.get("total_cost_usd") if _typed(r.get("total_cost_usd"), _NUM) else None
    nums = {"total_cost_usd": cost, "fitness_entries": len(fh), "generations": r.get("generations"),
            "min_generations": MIN_GENERATIONS}
    if cost is not None and not cost > 0:
        problems.append(f"training cost ${cost:g} is not > 0 (a cached-only run has no paid calls)")
    elif cost is not None and "ledger_head_hash" in r and r["ledger_head_hash"] is None:
        problems.append("a paid run's receipt needs its ledger_head_hash")
    if len(fh) < MIN_GENERATIONS:
        problems.append(f"{len(fh)} fitness entries, need ≥ {MIN_GENERATIONS} generations")
    if _typed(r.get("generations"), (int,)) and r["generations"] != len(fh):
        problems.append(f"generations {r['generations']} != {len(fh)} fitness entries")
    if problems:
        return GateResult(name, FAIL, "; ".join(problems), nums)
    return GateResult(name, PASS, f"cost ${cost:.4f} > 0, {len(fh)} generations, all fields typed", nums)


def ledger_hashes(path: Path) -> set[str]:
    return {rec["h"] for rec in read_jsonl(path) if isinstance(rec, dict) and isinstance(rec.get("h"), str)}


def gate_ledger(c: _Ctx) -> GateResult:
    name, b = "ledger", c.b
    if b.format == MINIROUTER:
        return GateResult(name, WARN, "does not apply: minirouter bundles carry no cost receipt", {})
    r = b.receipt or {}
    receipt_total = r.get("total_cost_usd")
    if not _typed(receipt_total, _NUM):
        return GateResult(name, FAIL, "receipt has no numeric total_cost_usd", {})
    if c.run is None:
        return GateResult(name, FAIL, f"cannot verify the receipt: {c.run_note}", {"receipt_usd": receipt_total})
    from trinity.submission.pack import verified_ledger

    try:
        totals = verified_ledger(c.run)
    except InputError as e:
        return GateResult(name, FAIL, str(e), {"receipt_usd": receipt_total})
    head = r.get("ledger_head_hash")
    in_chain = head is None and not totals.present or (
        isinstance(head, str) and totals.present and head in ledger_hashes(c.run.ledger))
    diff = abs(float(receipt_total) - totals.total_usd)
    nums = {"receipt_usd": receipt_total, "ledger_usd": round(totals.total_usd, 6), "diff_usd": round(diff, 6),
            "tolerance_usd": LEDGER_TOLERANCE_USD, "ledger_records": totals.n_records,
            "ledger_head": totals.head_hash, "receipt_head": head, "head_in_chain": in_chain,
            "ledger": str(c.run.ledger)}
    problems = []
    if diff > LEDGER_TOLERANCE_USD:
        problems.append(f"receipt ${float(receipt_total):.4f} != ledger ${totals.total_usd:.4f} "
                        f"(off by ${diff:.4f} > ${LEDGER_TOLERANCE_USD})")
    if not in_chain:
        problems.append(f"receipt ledger head {head} is not a record of the verified ledger")
    if problems:
        return GateResult(name, FAIL, "; ".join(problems), nums)
    return GateResult(name, PASS, f"receipt ${float(receipt_total):.4f} matches the verified ledger "
                      f"(${totals.total_usd:.4f}, {totals.n_records} records)", nums)


def gate_schema(c: _Ctx) -> GateResult:
    name, b = "schema", c.b
    doc = b.receipt if b.format == TINYROUTER else b.summary
    claimed = (doc or {}).get("pool_models") or (doc or {}).get("models")
    nums: dict[str, Any] = {"receipt_pool": claimed, "configured_pool": c.pool_models,
                            "configured_from": c.pool_source}
    problems = []
    if not (isinstance(claimed, list) and claimed and all(isinstance(m, str) for m in claimed)):
        if b.format == MINIROUTER:
            return GateResult(name, WARN, "summary.json names no pool models; schema check does not apply", nums)
        return GateResult(name, FAIL, "receipt has no pool_models list of model ids", nums)
    if c.pool_models is None:
        problems.append(f"no configured pool to compare with ({c.pool_source})")
    elif list(claimed) != list(c.pool_models):
        problems.append(f"receipt pool {claimed} != configured pool {c.pool_models} (order matters: "
                        "it is the order of the head's model rows)")
    if b.head is not None and b.head.ndim == 2 and b.head.shape[0] != len(claimed) + N_ROLES:
        problems.append(f"head has {b.head.shape[0]} rows, the pool needs {len(claimed)} + 3")
    if b.format == TINYROUTER:
        n_total = (doc or {}).get("n_total")
        _, hidden, n_svf, _ = _expected_layout(b)
        actual = int(b.head.size + b.svf.size) if b.head is not None and b.svf is not None else None
        expected = (len(claimed) + N_ROLES) * hidden + n_svf
        nums.update(n_total=n_total, actual_total=actual, expected_total=expected)
        if n_total != actual or n_total != expected:
            problems.append(f"n_total {n_total} != {actual} stored parameters "
                            f"(expected {expected} for {len(claimed)} models, hidden {hidden}, {n_svf} SVF scales)")
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
    nums: dict[str, Any] = {"bundle_size": int(joined.size), "run_size": int(ref.size),
                            "run_theta": str(c.run.best_theta)}
    if ref.size != joined.size:
        return GateResult(name, FAIL, f"unpacked θ has {joined.size} values, the run's {ref.size}", nums)
    # float32 storage: |x32 − x| ≤ 2⁻²⁴·|x|; allow a little more.
    err = np.abs(joined - ref)
    nums.update(max_abs_diff=float(err.max()),
                max_rel_diff=float((err / np.maximum(np.abs(ref), 1e-30)).max()))
    if not np.allclose(joined, ref, rtol=1e-6, atol=1e-9, equal_nan=False):
        return GateResult(name, FAIL, f"unpacked θ differs from the run's best θ (max |Δ| "
                          f"{nums['max_abs_diff']:.3g}): the bundle is not this run's head, or the run trained further "
                          "after packing (pack it again)", nums)
    return GateResult(name, PASS, f"unpack reproduces the run's best θ (max |Δ| {nums['max_abs_diff']:.2g}, "
                      "within float32)", nums)


GATE_FUNCS: tuple[Callable[[_Ctx], GateResult], ...] = (
    gate_rate_limit, gate_weight_sanity, gate_duplicate, gate_receipt, gate_ledger, gate_schema,
    gate_theta_roundtrip,
)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")


def _configured_pool(explicit: list[str] | None, b: LoadedBundle, run: RunDir | None,
                     ) -> tuple[list[str] | None, str]:
    if explicit:
        return list(explicit), "given"
    from trinity.submission.pool_config import pool_models_for

    name = (b.receipt or b.summary or {}).get("pool")
    if run is not None:
        meta = run.read_meta()
        name = meta.get("pool") or name
    if isinstance(name, str) and name:
        models, where = pool_models_for(name)
        if models:
            return models, where
    if run is not None:
        models = run.read_meta().get("models")
        if isinstance(models, list) and models:
            return [str(m) for m in models], f"run.json of {run.id}"
    return None, "no --pool-models, no configs/models.yaml pool and no source run"


def check_bundle(bundle_dir: str | os.PathLike, against: list[str | os.PathLike] | str | os.PathLike | None = None,
                 king: str | os.PathLike | None = None,
                 history: SubmissionHistory | str | os.PathLike | None = None, *, miner: str | None = None,
                 run_dir: str | os.PathLike | None = None, pool_models: list[str] | None = None,
                 now: float | None = None) -> GateReport:
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
    pool, pool_src = _configured_pool(pool_models, b, run)
    ctx = _Ctx(b=b, miner=miner or b.miner, history=hist, run=run, run_note=note, against=roots,
               king=king_path, pool_models=pool, pool_source=pool_src,
               now=time.time() if now is None else now)
    results = [f(ctx) for f in GATE_FUNCS]
    return GateReport(bundle=str(b.path), format=b.format, bundle_hash=b.hash, miner=ctx.miner,
                      run_dir=str(run.path) if run else None, results=results)


