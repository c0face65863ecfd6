"""TinyRouter's Milestone 1, prompt triage (`tinyrouter-m1`): the whole competition as data.

The host runs the frozen Qwen3-0.6B; a miner submits only a head that reads its feature and
names the prompt's domain and difficulty. This module is the one place that says, for this
track: the domain lists of both configs, the encoder input text and the pooling, the head
shapes, the pack layout, the gates in their order, the rate limit, the score and the win margin.

Read from James-CUDA/Gittensor-TinyRouter @ 1767d1f (none of its code is copied here):
`docs/MILESTONE1.md`, `src/trinity/m1/{constants,domains,gates,metrics,pack,scoring,
leaderboard}.py`, `src/trinity/coordinator/{triage_head,attention_pool,slm}.py`,
`src/trinity/orchestration/session.py` (`_transcript_text`), `scripts/{pack,preflight,
validate,eval}_milestone1.py`.

- Features. Penultimate (their default): the text `"QUERY:\\n{prompt}" + "\\n<Head Input>"`
  tokenised without special tokens, one EOS appended, the final layer's hidden state at
  position -2, L2-normalised (the main track's turn-1 feature). Attentive: the final layer's
  states of every position but the EOS, not normalised; `alpha = softmax(H q)` (with the
  optional key projection `(H W_k^T) q`), `h = alpha H`, then `h / |h|`.
- Head. Bias-free `W_domain (C, d_h)` and `W_diff (5, d_h)`; argmax of each (ties: the first
  index); difficulty label = index + 1.
- Pack. `submissions/<miner>/m1/{config.json, W_domain.npy, W_diff.npy[, attention_query.npy]
  [, W_k.npy]}`, float32; config.json holds config, pool, d_h, use_key_proj, n_domains,
  n_diff, schema "tinyrouter-m1-v1" and meta.
- Gates, in their order: weight_sanity (their `validate`: shapes vs the config, finite, pool,
  the attention query, the parameter limit), param_budget (params < 1,000,000), rate_limit
  (at most 1 row for the miner, name case-insensitive, in `submissions/m1_attempts.jsonl`
  with a `ts` in the last 24 hours; unreadable rows and times are skipped, as theirs does).
- Score. composite = 0.7 × domain accuracy + 0.3 × difficulty exact; also domain macro-F1
  (over the labels in truth ∪ predictions), difficulty within ±1, joint accuracy, per-domain
  accuracy. The challenger merges when composite ≥ king + 0.02 (no king: it merges).
  The king lives in `submissions/m1_leaderboard_<config>.json`.

Numpy and the standard library only: the model, analysis and submission layers read it.
"""

from __future__ import annotations

import calendar
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trinity.competition.text import TINYROUTER, router_text
from trinity.errors import InputError

NAME = "tinyrouter-m1"
TITLE = "TinyRouter Milestone 1 (prompt triage)"
REPOSITORY = "James-CUDA/Gittensor-TinyRouter"
HUB_DATASET = "James-Cuda/tinyrouter-m1"
HUB_SPLITS = ("train", "test")
ENCODER = "Qwen/Qwen3-0.6B"
SCHEMA = "tinyrouter-m1-v1"
FIELDS = ("id", "domain", "difficulty", "prompt")

DOMAINS_5: tuple[str, ...] = ("math", "code", "knowledge", "commonsense", "instruction")
DOMAINS_20: tuple[str, ...] = (
    "agriculture",
    "archaeology",
    "architecture",
    "astronomy",
    "automotive",
    "aviation",
    "chemistry",
    "cooking",
    "energy",
    "finance",
    "gardening",
    "hardware",
    "marine",
    "music",
    "photography",
    "physiology",
    "sports",
    "textiles",
    "weather",
    "wildlife",
)
CONFIGS: dict[str, tuple[str, ...]] = {"5-domain": DOMAINS_5, "20-domain": DOMAINS_20}
_CONFIG_ALIASES = {"5-domain": "5-domain", "5": "5-domain", "five": "5-domain", "20-domain": "20-domain"}
_CONFIG_ALIASES |= {"20": "20-domain", "twenty": "20-domain", "gci": "20-domain"}

N_DIFFICULTY = 5
DEFAULT_D_H = 1024
POOLS = ("penultimate", "attentive")
MAX_HEAD_PARAMS = 1_000_000  # rejected when params >= this
RATE_MAX = 1
RATE_WINDOW_S = 86_400
DOMAIN_WEIGHT = 0.7
WIN_MARGIN = 0.02
ATTEMPTS_FILE = "m1_attempts.jsonl"  # under submissions/

# Gates in their order: (our name, their name). All block.
GATES: tuple[tuple[str, str], ...] = (
    ("weight_sanity", "weight_sanity"),
    ("param_budget", "param_budget"),
    ("rate_limit", "rate_limit"),
)
# Their repository has no Milestone-1 PR template: ours follow the main track's pattern.
BRANCH_TEMPLATE = "submission/{miner}-m1-{config}"
TITLE_TEMPLATE = "[submission] {miner} m1 — {config} {pool}"


def canonical_config(config: str) -> str:
    """'5-domain' / '20-domain' for any spelling their code accepts; InputError otherwise."""
    key = str(config).strip().lower().replace("_", "-")
    try:
        return _CONFIG_ALIASES[key]
    except KeyError:
        raise InputError(f"unknown Milestone-1 config {config!r}; use 5-domain or 20-domain") from None


def domains_of(config: str) -> tuple[str, ...]:
    return CONFIGS[canonical_config(config)]


def encoder_text(prompt: str) -> str:
    """The text the encoder reads for one prompt (EOS is appended by tokenisation)."""
    return router_text(TINYROUTER).encoder_input(prompt, ())


def head_shapes(config: str, d_h: int = DEFAULT_D_H) -> dict[str, tuple[int, ...]]:
    return {"W_domain": (len(domains_of(config)), d_h), "W_diff": (N_DIFFICULTY, d_h)}


def submission_dir(root: str | Path, miner: str) -> Path:
    """`<root>/submissions/<miner>/m1` — where a pack goes in a clone of their repository."""
    return Path(root) / "submissions" / miner / "m1"


# ---- features ---------------------------------------------------------------------------------


def l2_normalise(h: np.ndarray) -> np.ndarray:
    """Row-wise h / |h| (a zero row stays zero), as their encoder and attentive router do."""
    h = np.asarray(h, dtype=np.float32)
    n = np.linalg.norm(h, axis=-1, keepdims=True)
    return np.where(n > 0, h / np.where(n > 0, n, 1), h).astype(np.float32)


def attentive_pool(H: np.ndarray, query: np.ndarray, W_k: np.ndarray | None = None) -> np.ndarray:
    """One prompt's token states `(K, d_h)` → the pooled, L2-normalised feature `(d_h,)`."""
    H = np.asarray(H, dtype=np.float32)
    keys = H @ W_k.T.astype(np.float32) if W_k is not None else H
    s = keys @ np.asarray(query, dtype=np.float32)
    a = np.exp(s - s.max())
    a /= a.sum()
    return l2_normalise(a @ H)


# ---- the pack ---------------------------------------------------------------------------------


@dataclass
class M1Pack:
    config: str
    pool: str
    d_h: int
    W_domain: np.ndarray
    W_diff: np.ndarray
    attention_query: np.ndarray | None = None
    W_k: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_params(self) -> int:
        n = int(self.W_domain.size + self.W_diff.size)
        for extra in (self.attention_query, self.W_k):
            if extra is not None:
                n += int(extra.size)
        return n

    def problems(self) -> list[str]:
        """What their `validate` refuses, first problem first (empty: the pack is sane)."""
        try:
            domains = domains_of(self.config)
        except InputError as e:
            return [str(e)]
        out: list[str] = []
        want_dom, want_diff = (len(domains), self.d_h), (N_DIFFICULTY, self.d_h)
        if tuple(self.W_domain.shape) != want_dom:
            out.append(f"W_domain shape {tuple(self.W_domain.shape)} != {want_dom} for {self.config}")
        if tuple(self.W_diff.shape) != want_diff:
            out.append(f"W_diff shape {tuple(self.W_diff.shape)} != {want_diff}")
        if not (np.isfinite(self.W_domain).all() and np.isfinite(self.W_diff).all()):
            out.append("W_domain / W_diff contain NaN or Inf")
        if self.pool not in POOLS:
            out.append(f"pool must be penultimate or attentive, got {self.pool!r}")
        if self.pool == "attentive":
            if self.attention_query is None:
                out.append("an attentive pack needs attention_query.npy")
            elif tuple(self.attention_query.shape) != (self.d_h,):
                out.append(f"attention_query shape {tuple(self.attention_query.shape)} != {(self.d_h,)}")
        if self.W_k is not None and tuple(self.W_k.shape) != (self.d_h, self.d_h):
            out.append(f"W_k shape {tuple(self.W_k.shape)} != {(self.d_h, self.d_h)}")
        if self.n_params >= MAX_HEAD_PARAMS:
            out.append(f"head params {self.n_params:,} >= limit {MAX_HEAD_PARAMS:,}")
        return out

    # -- prediction on features (penultimate: the encoder's feature; attentive: pooled first) --
    def predict(self, feats: np.ndarray) -> tuple[list[str], list[int]]:
        X = np.asarray(feats, dtype=np.float32)
        dom = np.argmax(X @ self.W_domain.astype(np.float32).T, axis=1)
        dif = np.argmax(X @ self.W_diff.astype(np.float32).T, axis=1)
        names = domains_of(self.config)
        return [names[int(i)] for i in dom], [int(i) + 1 for i in dif]

    def config_json(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {
            "config": self.config,
            "pool": self.pool,
            "d_h": int(self.d_h),
            "use_key_proj": self.W_k is not None,
            "n_domains": int(self.W_domain.shape[0]),
            "n_diff": N_DIFFICULTY,
            "schema": SCHEMA,
        }
        if self.meta:
            cfg["meta"] = self.meta
        return cfg

    def save(self, path: str | Path) -> Path:
        """Write the pack (refusing one their loader would refuse)."""
        bad = self.problems()
        if bad:
            raise InputError(f"refusing to write an M1 pack that would be rejected: {bad[0]}")
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / "config.json").write_text(json.dumps(self.config_json(), indent=2) + "\n", encoding="utf-8")
        np.save(path / "W_domain.npy", self.W_domain.astype(np.float32))
        np.save(path / "W_diff.npy", self.W_diff.astype(np.float32))
        if self.attention_query is not None:
            np.save(path / "attention_query.npy", self.attention_query.astype(np.float32))
        if self.W_k is not None:
            np.save(path / "W_k.npy", self.W_k.astype(np.float32))
        return path


def _load_npy(path: Path) -> np.ndarray:
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: not a readable .npy array ({str(e).splitlines()[0][:120]})") from None
    if not isinstance(arr, np.ndarray) or not np.issubdtype(arr.dtype, np.number):
        raise InputError(f"{path}: not a numeric .npy array")
    return arr


def load_pack(path: str | Path) -> M1Pack:
    """Read a pack folder without validating it (the gates say what is wrong); a missing or
    unreadable file is one InputError naming it."""
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"M1 pack folder not found: {path} (expected submissions/<miner>/m1)")
    cfg_path = path / "config.json"
    if not cfg_path.is_file():
        raise InputError(f"{path} has no config.json; pack it with `trinity m1 pack`")
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{cfg_path}: not valid JSON ({e})") from None
    if not isinstance(cfg, dict) or "config" not in cfg:
        raise InputError(f"{cfg_path}: needs a 'config' field (5-domain or 20-domain)")
    for name in ("W_domain.npy", "W_diff.npy"):
        if not (path / name).is_file():
            raise InputError(f"{path} has no {name}")
    W_domain, W_diff = _load_npy(path / "W_domain.npy"), _load_npy(path / "W_diff.npy")
    aq, wk = path / "attention_query.npy", path / "W_k.npy"
    d_h = cfg.get("d_h", W_domain.shape[1] if W_domain.ndim == 2 else DEFAULT_D_H)
    if not isinstance(d_h, int) or d_h < 1:
        raise InputError(f"{cfg_path}: d_h must be a positive integer, got {d_h!r}")
    meta = cfg.get("meta")
    return M1Pack(
        config=str(cfg["config"]),
        pool=str(cfg.get("pool", "penultimate")),
        d_h=d_h,
        W_domain=W_domain,
        W_diff=W_diff,
        attention_query=_load_npy(aq) if aq.is_file() else None,
        W_k=_load_npy(wk) if wk.is_file() else None,
        meta=meta if isinstance(meta, dict) else {},
    )


# ---- gates ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gate:
    name: str
    ok: bool
    detail: str = ""


def attempts_path(root: str | Path) -> Path:
    return Path(root) / "submissions" / ATTEMPTS_FILE


def _ts_epoch(ts: object) -> int | None:
    """Their `YYYY-MM-DDTHH:MM:SSZ` parse; None where theirs skips the row."""
    try:
        day, clock = str(ts or "").rstrip("Z").split("T")
        y, m, d = (int(x) for x in day.split("-"))
        hh, mm, ss = (int(float(x)) for x in clock.split(":"))
        return calendar.timegm((y, m, d, hh, mm, ss, 0, 0, 0))
    except (ValueError, TypeError):
        return None


def read_attempts(root: str | Path) -> list[dict[str, Any]]:
    path = attempts_path(root)
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


def recent_attempts(miner: str, root: str | Path, now: float | None = None) -> int:
    now = time.time() if now is None else now
    cutoff = now - RATE_WINDOW_S
    n = 0
    for row in read_attempts(root):
        if str(row.get("miner", "")).lower() != miner.lower():
            continue
        t = _ts_epoch(row.get("ts"))
        if t is not None and t >= cutoff:
            n += 1
    return n


def append_attempt(
    root: str | Path, miner: str, submission: str, ok: bool, metrics: dict[str, Any] | None = None
) -> Path:
    """One attempt row in their format (the validator writes these; a dry run never does)."""
    path = attempts_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    row = {
        "miner": miner,
        "submission": submission,
        "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "ok": bool(ok),
        "metrics": metrics or {},
    }
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    return path


def run_gates(
    pack: M1Pack, miner: str, root: str | Path, now: float | None = None, skip_rate_limit: bool = False
) -> list[Gate]:
    """Their gates, in their order; `root` is the repository root holding `submissions/`."""
    bad = pack.problems()
    gates = [Gate("weight_sanity", not bad, bad[0] if bad else "")]
    n = pack.n_params
    if n >= MAX_HEAD_PARAMS:
        gates.append(Gate("param_budget", False, f"head params {n:,} >= limit {MAX_HEAD_PARAMS:,}"))
    else:
        gates.append(Gate("param_budget", True, f"n_params={n}"))
    if not skip_rate_limit:
        recent = recent_attempts(miner, root, now)
        if recent >= RATE_MAX:
            gates.append(
                Gate(
                    "rate_limit",
                    False,
                    f"miner {miner!r} already has {recent} M1 submission(s) in the last 1 day(s) (max {RATE_MAX})",
                )
            )
        else:
            gates.append(Gate("rate_limit", True, f"recent={recent}/{RATE_MAX}"))
    return gates


# ---- score ------------------------------------------------------------------------------------


def _div(a: float, b: float) -> float:
    return float(a / b) if b else 0.0


def domain_prf(y_true: list[str], y_pred: list[str]) -> dict[str, tuple[float, float, float]]:
    """Per label (true or predicted): (precision, recall, F1), as their macro-F1 computes them."""
    out: dict[str, tuple[float, float, float]] = {}
    for lab in sorted(set(y_true) | set(y_pred)):
        tp = sum(1 for t, p in zip(y_true, y_pred) if t == lab and p == lab)
        fp = sum(1 for t, p in zip(y_true, y_pred) if t != lab and p == lab)
        fn = sum(1 for t, p in zip(y_true, y_pred) if t == lab and p != lab)
        prec, rec = _div(tp, tp + fp), _div(tp, tp + fn)
        out[lab] = (prec, rec, _div(2 * prec * rec, prec + rec) if (prec + rec) else 0.0)
    return out


def macro_f1(y_true: list[str], y_pred: list[str]) -> float:
    f1s = [f for _, _, f in domain_prf(y_true, y_pred).values()]
    return float(sum(f1s) / len(f1s)) if f1s else 0.0


@dataclass(frozen=True)
class TriageScore:
    n: int
    domain_accuracy: float
    domain_macro_f1: float
    difficulty_exact: float
    difficulty_within_1: float
    joint_accuracy: float
    composite: float
    per_domain_accuracy: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def row_composite(dom_ok: np.ndarray, diff_ok: np.ndarray, domain_weight: float = DOMAIN_WEIGHT) -> np.ndarray:
    """Each row's share of the composite (its mean is the composite): for bootstrap intervals."""
    w = float(domain_weight)
    return w * np.asarray(dom_ok, dtype=float) + (1.0 - w) * np.asarray(diff_ok, dtype=float)


def score(
    y_domain: list[str],
    y_diff: list[int],
    pred_domain: list[str],
    pred_diff: list[int],
    domain_weight: float = DOMAIN_WEIGHT,
) -> TriageScore:
    """Their `score_triage`, number for number."""
    n = len(y_domain)
    if not (n == len(y_diff) == len(pred_domain) == len(pred_diff)):
        raise InputError("labels and predictions differ in length")
    if n == 0:
        return TriageScore(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, {})
    dom_ok = [t == p for t, p in zip(y_domain, pred_domain)]
    diff_ok = [int(t) == int(p) for t, p in zip(y_diff, pred_diff)]
    within = [abs(int(t) - int(p)) <= 1 for t, p in zip(y_diff, pred_diff)]
    joint = [a and b for a, b in zip(dom_ok, diff_ok)]
    tot: dict[str, int] = {}
    hit: dict[str, int] = {}
    for t, ok in zip(y_domain, dom_ok):
        tot[t] = tot.get(t, 0) + 1
        hit[t] = hit.get(t, 0) + int(ok)
    d_acc, f_exact = _div(sum(dom_ok), n), _div(sum(diff_ok), n)
    w = float(domain_weight)
    return TriageScore(
        n=n,
        domain_accuracy=d_acc,
        domain_macro_f1=macro_f1(list(y_domain), list(pred_domain)),
        difficulty_exact=f_exact,
        difficulty_within_1=_div(sum(within), n),
        joint_accuracy=_div(sum(joint), n),
        composite=w * d_acc + (1.0 - w) * f_exact,
        per_domain_accuracy={d: _div(hit[d], tot[d]) for d in sorted(tot)},
    )


def decide(king: float | None, challenger: float, margin: float = WIN_MARGIN) -> tuple[bool, str]:
    """Their `decide_m1_winner`: (merge, reason)."""
    if king is None:
        return True, "no king: the challenger becomes the first king"
    need = float(king) + float(margin)
    if challenger >= need:
        return True, f"challenger {challenger:.4f} >= king {king:.4f} + margin {margin:.4f} (need {need:.4f})"
    return False, f"challenger {challenger:.4f} < king {king:.4f} + margin {margin:.4f} (need {need:.4f})"


def leaderboard_path(root: str | Path, config: str) -> Path:
    return Path(root) / "submissions" / f"m1_leaderboard_{canonical_config(config)}.json"


def read_king(root: str | Path, config: str) -> dict[str, Any] | None:
    """The king row of the config's leaderboard (None: no leaderboard or no king yet)."""
    path = leaderboard_path(root, config)
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not valid JSON ({e})") from None
    king = raw.get("king") if isinstance(raw, dict) else None
    return king if isinstance(king, dict) else None


@dataclass(frozen=True)
class M1Profile:
    """The track at a glance (what `trinity m1 check` and the app print)."""

    name: str = NAME
    title: str = TITLE
    repository: str = REPOSITORY
    dataset: str = HUB_DATASET
    configs: tuple[str, ...] = tuple(CONFIGS)
    pools: tuple[str, ...] = POOLS
    gates: tuple[tuple[str, str], ...] = GATES
    max_head_params: int = MAX_HEAD_PARAMS
    rate_max: int = RATE_MAX
    rate_window_s: int = RATE_WINDOW_S
    domain_weight: float = DOMAIN_WEIGHT
    win_margin: float = WIN_MARGIN
    encoder: str = ENCODER

    def branch(self, miner: str, config: str) -> str:
        return BRANCH_TEMPLATE.format(miner=miner, config=canonical_config(config))

    def pr_title(self, miner: str, config: str, pool: str) -> str:
        return TITLE_TEMPLATE.format(miner=miner, config=canonical_config(config), pool=pool)


PROFILE = M1Profile()


# ---- the ordinary commands hand an M1 run or pack over ----------------------------------------

_M1_COMMANDS = {
    "eval": "trinity m1 eval {path}",
    "score": "trinity m1 score {path} --king PACK",
    "pack": "trinity m1 pack {path} --miner NAME --root REPO",
    "check": "trinity m1 check {path} --miner NAME",
    "submit": "trinity m1 submit {path} --repo REPO --miner NAME",
}


def is_m1_path(path: str | Path) -> bool:
    """A Milestone-1 run directory (run.json mode "m1") or pack folder (W_domain.npy)."""
    p = Path(path)
    if (p / "W_domain.npy").is_file():
        return True
    # a tolerant sniff of run.json's `mode`, not a read of the run: this layer sits below the run
    # directory's records (trinity.runs.records), and a run.json it cannot read is simply not M1's
    # (the command that goes on reads it through its record and says what is wrong)
    try:
        meta = json.loads((p / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("mode") == "m1"


def refuse_m1(path: str | Path, command: str, force: bool = False) -> None:
    """InputError naming the `trinity m1` command when `path` is M1's (or `force`)."""
    if force or is_m1_path(path):
        raise InputError(
            f"{path} is a Milestone-1 (prompt triage) {'pack' if (Path(path) / 'W_domain.npy').is_file() else 'run'}: "
            f"use `{_M1_COMMANDS[command].format(path=path)}`"
        )
