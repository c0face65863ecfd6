"""trinity.analysis — where a router stands: oracle ceiling, baselines, evaluation, score estimate.

Library entry points (each takes an optional `progress(done, total, what)` callback and returns
a dataclass with `to_json()`; numpy only — loading a run's router imports torch lazily):

- `oracle.oracle_ceiling(matrix, seed=0, splits=200, bootstrap=2000, router_correct=None, progress=None)`
- `evaluate.oracle_for_run(run_dir, split="test", matrix=None, benchmark=None, ...)`
- `baselines.cached_baselines(matrix, ids, split=, source=, seeds=100, seed=0, bootstrap=2000, progress=None)`
  (alias `baselines.baselines`), `live.live_baselines(...)`
- `evaluate.evaluate_run(run_dir, split="test", mode="cached"|"live", samples=1, ..., write=True)`
- `score.score_estimate(run_dir, king=None, eval_split="val", audit_split="test")`
- `stats`: `wilson_ci`, `bootstrap_ci`, `paired_bootstrap_ci`, `mcnemar_exact`, `accuracy_ci`
- `render`: Rich views (`oracle_view`, `baselines_view`, `eval_view`, `score_view`); `plots`: PNGs.
"""
