"""PR titles and bodies in the form each competition's bots read.

TinyRouter: `.github/PULL_REQUEST_TEMPLATE.md` + SUBMITTING.md — the title
`[submission] <miner> gen <n> — composite`, the "Routing head submission" box ticked, every
`**Label:**` field filled inline (pr_bot reads them inline), the submission files listed. The
"Rules acknowledgment" boxes are the miner's own statements: they are left for the miner to tick.

MiniRouter: `.github/PULL_REQUEST_TEMPLATE/submission.md` + `submission-pr-check.yml` — the
`- Miner name:`, `` - `owner_id`: ``, `` - `key_id`: ``, `- Benchmark:`, `- Local eval score:`
lines, non-empty, and the three ticked boxes (best_theta.npy, summary.json,
validate_submission.py); branch `sn74-<miner>`.

`info` carries what the bundle says (`miner`, `n`, `benchmark`, `run_id`, `generations`,
`popsize`, `m_cma`, `sigma0`, `best_fitness`, `total_cost_usd`, `ledger_head_hash`, `pool`,
`pool_names`, `local_score`, `local_score_settings`, `owner_id`, `key_id`, `gates_ok`) and
`gate_lines` the local pre-check, one line per gate.
"""

from __future__ import annotations

from typing import Any

from trinity.competition.profiles import Profile
from trinity.competition.text import MINIROUTER, TINYROUTER


def _f(v: object, spec: str = ".4f", none: str = "n/a") -> str:
    return format(v, spec) if isinstance(v, (int, float)) and not isinstance(v, bool) else none


def pr_title(p: Profile, info: dict[str, Any]) -> str:
    """The competition's title; the benchmark carries its figure (the local eval score, else the
    best training fitness), never a bare "— composite"."""
    bench = info.get("benchmark") or "unknown"
    score = info.get("local_score")
    if score is None and isinstance(info.get("best_fitness"), (int, float)):
        score = f"{info['best_fitness']:.4f} fitness"
    return p.title_template.format(
        miner=info["miner"], n=info.get("n") or 1, benchmark=f"{bench} {score}" if score is not None else bench
    )


def _shapes(info: dict[str, Any]) -> tuple[str, str]:
    """The bundle's real array shapes: head W (n_models + 3) × hidden, SVF scales (n_svf,)."""
    n_models, hidden, n_svf = info.get("n_models"), info.get("hidden"), info.get("n_svf")
    head = f"({n_models + 3} × {hidden})" if isinstance(n_models, int) and isinstance(hidden, int) else "(shape n/a)"
    svf = f"({n_svf},)" if isinstance(n_svf, int) else "(shape n/a)"
    return head, svf


def _method(info: dict[str, Any]) -> str:
    parts = [
        f"{k} {info[key]}"
        for k, key in (("popsize", "popsize"), ("m", "m_cma"), ("σ0", "sigma0"))
        if info.get(key) is not None
    ]
    gens = info.get("generations")
    return (
        "separable CMA-ES (minertui)"
        + (f", {gens} generations" if gens is not None else "")
        + (f", {', '.join(parts)}" if parts else "")
    )


def _tinyrouter_body(p: Profile, info: dict[str, Any], gate_lines: list[str]) -> list[str]:
    benches = " + ".join(p.competition_benchmarks)
    files = "- [x]" if info.get("gates_ok") else "- [ ]"
    out = [
        "## Type",
        "",
        "**Only routing head submissions that improve accuracy earn TAO via Gittensor.**",
        "",
        "- [x] **Routing head submission** — I trained a coordinator head and want it evaluated for the "
        "leaderboard (earns TAO if merged)",
        "- [ ] General improvement — bug fix, docs, refactor, or infrastructure (welcome but earns no TAO)",
        "",
        "---",
        "",
        "## Routing head submission",
        "",
        f"**Benchmark:** {info.get('benchmark') or 'composite'} (one head across {benches})",
        "",
        f"**Miner name:** {info['miner']}",
        "",
        f"**Generation:** {info.get('n') or 1}",
        "",
        f"**Training method:** {_method(info)}",
        "",
        f"**Training cost:** ${_f(info.get('total_cost_usd'), '.2f', '0.00')} (from cost ledger; "
        f"${_f(info.get('total_cost_usd'), '.6f', '0')} exact, ledger head "
        f"`{info.get('ledger_head_hash') or 'none'}`)",
        "",
        f"**Notable techniques:** run `{info.get('run_id') or 'unknown'}`, best fitness "
        f"{_f(info.get('best_fitness'))}; head and SVF scales packed by `trinity pack --format tinyrouter`",
        "",
        "### Submission files",
        "",
        f"In `{info.get('bundle') or 'submissions/' + info['miner'] + '/' + str(info.get('n') or 1)}/`:",
        "",
        f"{files} `head_weights.npy` — linear head W {_shapes(info)[0]} float32",
        f"{files} `svf_scales.npy` — SVF singular-value scales {_shapes(info)[1]} float32",
        f"{files} `receipt.json` — training metadata (cost, generations, fitness curve)",
        "",
        "### Rules acknowledgment",
        "",
        "<!-- the miner's own statements: tick them yourself on GitHub -->",
        "- [ ] I trained this head myself — it is not a copy of another miner's submission",
        "- [ ] I understand the hidden benchmark is never revealed and the maintainer's decision is final",
        "- [ ] I understand that if my score does not beat the current best, this PR will be closed without merge",
        "- [ ] I understand that only merged routing head PRs earn TAO",
    ]
    if gate_lines:
        out += ["", "### Local pre-check (minertui `trinity check`)", "", *gate_lines]
    return out


def _minirouter_body(p: Profile, info: dict[str, Any], gate_lines: list[str]) -> list[str]:
    ok = "x" if info.get("gates_ok") else " "
    pool = info.get("pool_names") or []
    out = [
        "## Miner",
        "",
        f"- Branch: `{p.branch(info['miner'], info.get('n'))}`",
        f"- Miner name: {info['miner']}",
        "",
        "## What changed",
        "",
        f"Routing head (θ {info.get('n_total') or 'n/a'} values) trained by {_method(info)}; run "
        f"`{info.get('run_id') or 'unknown'}`, best fitness {_f(info.get('best_fitness'))}.",
        "",
        "## Benchmark & setup",
        "",
        f"- Benchmark: {info.get('benchmark') or 'unknown'}",
        f"- Provider: {info.get('pool') or 'unknown'}",
        f"- Models config: {', '.join(pool) if pool else 'unknown'}",
        "",
        "## MiniBridge identity used for evaluation",
        "",
        f"- `owner_id`: {info.get('owner_id') or ''}",
        f"- `key_id`: {info.get('key_id') or ''}",
        "",
        "## Final model bundle",
        "",
        f"- [{ok}] `submissions/final_model/best_theta.npy` included",
        f"- [{ok}] `submissions/final_model/summary.json` included",
        f"- [{ok}] `python utility/validate_submission.py --dir submissions/final_model` passes locally "
        "(its checks, as run by `trinity check`)",
        "",
        "## Evaluation score",
        "",
        f"- Local eval score: {info.get('local_score') or 'not measured locally'}",
        f"- Benchmark settings used to obtain it: {info.get('local_score_settings') or 'n/a'}",
    ]
    if gate_lines:
        out += ["", "## Caveats or known limits", "", "Local pre-check (minertui `trinity check`):", "", *gate_lines]
    return out


_BODIES = {TINYROUTER: _tinyrouter_body, MINIROUTER: _minirouter_body}


def pr_body(p: Profile, info: dict[str, Any], gate_lines: list[str] | None = None) -> str:
    return "\n".join(_BODIES[p.name](p, info, gate_lines or [])) + "\n"


def pr_missing(p: Profile, info: dict[str, Any]) -> list[str]:
    """What the competition's PR check would find missing in `info` (each a sentence)."""
    if p.name == MINIROUTER:
        return [
            f"MiniRouter's PR check needs a non-empty {what}: pass --{flag}"
            for key, what, flag in (
                ("owner_id", "`owner_id` (your MiniBridge owner id)", "owner-id"),
                ("key_id", "`key_id` (your MiniBridge key id)", "key-id"),
            )
            if not str(info.get(key) or "").strip()
        ]
    return []
