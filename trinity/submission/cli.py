"""`trinity pack`, `trinity check`, `trinity submit` (docs/CONTRACTS.md, Submission). Heavy imports stay inside the
commands so the CLI starts fast."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trinity.competition import m1
from trinity.competition.cliargs import competition_arg


def _history_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--history",
        metavar="FILE",
        help="submission history JSONL (default: $MINERTUI_DATA_DIR/submissions.jsonl, "
        "else $XDG_DATA_HOME/minertui/submissions.jsonl)",
    )


def _gate_args(p: argparse.ArgumentParser) -> None:
    competition_arg(p)
    p.add_argument(
        "--against",
        metavar="DIR",
        action="append",
        help="directory of prior bundles (searched recursively; repeatable; default: the "
        "submissions/ folder the bundle is in)",
    )
    p.add_argument("--king", metavar="BUNDLE", help="the current king's bundle directory")
    p.add_argument(
        "--run",
        metavar="RUN_DIR",
        dest="run_dir",
        help="the run the bundle was packed from (default: found via the submission history)",
    )
    p.add_argument(
        "--pool-models",
        metavar="A,B,C",
        help="the configured pool in router order (default: the run's pool in configs/models.yaml)",
    )
    _history_arg(p)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("pack", help="pack a finished run into a submission bundle")
    p.add_argument("run_dir", metavar="RUN_DIR", help="the finished run directory to pack")
    p.add_argument("--miner", required=True, help="your miner (GitHub user) name")
    p.add_argument(
        "--format",
        choices=("minirouter", "tinyrouter", "tinyrouter-m1"),
        dest="fmt",
        help="minirouter: submissions/final_model/; tinyrouter: submissions/<miner>/<n>/; "
        "tinyrouter-m1: submissions/<miner>/m1/ (trinity m1 pack) (default: the competition's layout)",
    )
    competition_arg(p)
    p.add_argument(
        "--out",
        metavar="DIR",
        help="root of the competition checkout; the bundle goes to DIR/submissions/… (default: .)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="pack a run that has not finished (best θ so far); minirouter: replace a final_model/ whose "
        "tracked files the new bundle does not write (git keeps them)",
    )
    _history_arg(p)
    p.set_defaults(func=cmd_pack)

    p = sub.add_parser(
        "check",
        help="run the submission gates on a bundle",
        description="Run the competition's gates (its profile: TinyRouter or MiniRouter), in its "
        "order, with its reason codes, then its advisories. Exit 0 when no gate fails "
        "(WARN: a gate the competition does not block on, that does not apply, or had "
        "nothing to compare against), 1 when one fails.",
    )
    p.add_argument("bundle_dir", metavar="BUNDLE_DIR", help="a bundle written by trinity pack")
    p.add_argument("--miner", help="miner name for the rate limit (default: from the bundle)")
    _gate_args(p)
    p.add_argument("--json", action="store_true", help="print the gate report as JSON")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "submit",
        help="commit a bundle on the competition's branch, push it and open the PR",
        description="Show the plan (branch, files, commit message, push target, PR), refuse a "
        "dirty tree, secrets, big files or failing gates, then commit only the bundle "
        "on the competition's branch (see --branch), push it (--push) and open the PR (--pr). Prior bundles for "
        "the duplicate gate: --against, else the repository's submissions/ folder.",
    )
    p.add_argument("bundle_dir", metavar="BUNDLE_DIR", help="the bundle inside --repo (written by trinity pack)")
    p.add_argument("--repo", required=True, metavar="PATH", help="your clone of the competition repository")
    p.add_argument("--miner", required=True, help="your miner (GitHub user) name (it names the branch, see --branch)")
    p.add_argument("--base", default="main", help="base branch of the PR (default: main)")
    p.add_argument("--remote", default="origin", help="remote to push to (your fork; default: origin)")
    p.add_argument(
        "--upstream", help="remote of the competition repository (default: 'upstream' if present, else --remote)"
    )
    p.add_argument("--push", action="store_true", help="push the branch")
    p.add_argument("--pr", action="store_true", help="open the PR via the GitHub API ($GITHUB_TOKEN)")
    p.add_argument("--dry-run", action="store_true", help="show the plan and stop")
    p.add_argument("--skip-gates", action="store_true", help="do not run the gates (recorded in the commit)")
    p.add_argument("--api-url", help="GitHub API base URL (default: $GITHUB_API_URL or api.github.com)")
    p.add_argument(
        "--branch",
        help="branch to commit on (default: the competition's convention — TinyRouter "
        "submission/<miner>-gen<n>, MiniRouter sn74-<miner>)",
    )
    p.add_argument("--owner-id", help="MiniRouter: your MiniBridge owner_id (its PR check requires it)")
    p.add_argument("--key-id", help="MiniRouter: your MiniBridge key_id (its PR check requires it)")
    _gate_args(p)
    p.set_defaults(func=cmd_submit)


def _default_against(args: argparse.Namespace, bundle_dir: str) -> None:
    """Without --against, the prior bundles are those of the competition checkout the bundle
    sits in (its `submissions/` folder): the duplicate gate then compares against real priors
    instead of warning that it had nothing to compare."""
    if args.against:
        return

    for parent in Path(bundle_dir).resolve().parents:
        if parent.name == "submissions" and parent.is_dir():
            args.against = [str(parent)]
            return


def _pool(args: argparse.Namespace) -> list[str] | None:
    return [m.strip() for m in args.pool_models.split(",") if m.strip()] if args.pool_models else None


def cmd_pack(args: argparse.Namespace) -> int:
    from trinity.submission.pack import pack_run  # lazy: pydantic + PyYAML kept off the CLI start

    m1.refuse_m1(args.run_dir, "pack", force=args.fmt == "tinyrouter-m1")
    b = pack_run(
        args.run_dir,
        args.miner,
        args.fmt,
        out=args.out,
        force=args.force,
        history=args.history,
        competition=args.competition,
    )
    print("\n".join(b.describe()))
    print(f"next: trinity check {b.path}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from trinity.submission.gates import check_bundle  # lazy: pydantic + PyYAML kept off the CLI start

    m1.refuse_m1(args.bundle_dir, "check")
    _default_against(args, args.bundle_dir)
    rep = check_bundle(
        args.bundle_dir,
        args.against,
        args.king,
        args.history,
        miner=args.miner,
        run_dir=args.run_dir,
        pool_models=_pool(args),
        competition=args.competition,
    )
    if args.json:
        print(json.dumps(rep.to_dict(), indent=2))
    else:
        print("\n".join(rep.lines()))
    return 0 if rep.ok else 1


def cmd_submit(args: argparse.Namespace) -> int:
    # lazy: httpx + pydantic kept off the CLI start
    from trinity.submission.gitsubmit import StepResult, SubmitRefused, execute_plan, plan_submission

    m1.refuse_m1(args.bundle_dir, "submit")
    _default_against(args, args.bundle_dir)
    plan = plan_submission(
        args.bundle_dir,
        args.repo,
        args.miner,
        base=args.base,
        remote=args.remote,
        upstream=args.upstream,
        push=args.push,
        pr=args.pr,
        dry_run=args.dry_run,
        skip_gates=args.skip_gates,
        api_url=args.api_url,
        history=args.history,
        against=args.against,
        king=args.king,
        run_dir=args.run_dir,
        pool_models=_pool(args),
        competition=args.competition,
        owner_id=args.owner_id,
        key_id=args.key_id,
        branch=args.branch,
    )
    print("plan:")
    print("\n".join(f"  {ln}" for ln in plan.describe()))
    if plan.dry_run:
        if plan.refusals:
            raise SubmitRefused(f"this submission would be refused: {plan.refusals[0]}")
        print("dry run: nothing was done")
        return 0
    if not plan.refusals:  # a refused plan runs nothing: execute_plan records it and raises
        print("running:")

    def _show(s: StepResult) -> None:
        if s.status != "running":
            print(f"  {s.line()}", flush=True)

    result = execute_plan(plan, on_step=_show)
    if not result.ok:
        print(f"error: {result.message}", file=sys.stderr)
        return 5
    print(result.message)
    if result.pr_url:
        print(f"PR: {result.pr_url}")
    elif result.compare_url:
        print(f"open the PR: {result.compare_url}")
    return 0
