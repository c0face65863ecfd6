"""trinity.submission — from a trained head to a pull request (docs/CONTRACTS.md, Submission).

Modules (import them directly; this package stays light):
- `pack`        — `pack_run(run_dir, miner, fmt, out=None, force=False, history=None, competition=None) -> Bundle`
- `bundle`      — bundle formats, `load_bundle(dir) -> LoadedBundle`, `bundle_hash(dir)`
- `gates`       — `check_bundle(bundle_dir, against=None, king=None, history=None, *, miner, run_dir,
                  pool_models, now, competition) -> GateReport` (the profile's gates, in its order,
                  `GateResult(name, status, reason, numbers, theirs)`, plus `.advisories`, `.verdict()`)
- `gitsubmit`   — `plan_submission(bundle_dir, repo, miner, *, base, remote, upstream, push, pr,
                  dry_run, skip_gates, api_url, history, against, king, run_dir, pool_models)
                  -> SubmitPlan` (`.describe()`, `.refusals`), `execute_plan(plan, on_step=None,
                  token=None) -> SubmitResult(ok, message, commit, pushed, pr_url, compare_url,
                  continue_command, log)`
- `github`      — remote URL parsing, compare URL, the PR REST call
- `scan`        — 10 MB cap and secret patterns for the files about to be committed
- `history`     — `SubmissionHistory`: the local JSONL of packs and submit attempts
- `ledger_export` — the run's ledger in a competition's format (TinyRouter's {"m","p","c"} chain)
- `pool_config` — pool model lists and key variable names from `configs/models.yaml`
- `cli`         — `trinity pack | check | submit`
"""
