"""`trinity sweep SPEC.yaml --run-dir DIR`, `trinity sweep resume DIR [--trial ID]`, `trinity sweep status DIR`.

`trinity resume RUN` on a trial of a sweep with a budget goes through the sweep (as `trinity
sweep resume DIR --trial ID`): the trial then reserves from the sweep's one budget, recovered
from all its trials' ledgers, instead of running with none. `route_trial_resume` wraps
the resume command's handler for that (called by trinity.cli once every command is registered).

No Ray import at module level (the CLI starts fast; Ray is an optional extra).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from trinity.errors import ConfigError

USAGE = (
    "trinity sweep SPEC.yaml --run-dir DIR [--address HOST:PORT] [--budget-usd X]\n"
    "       trinity sweep resume DIR [--trial ID ...] [--generations N] [--address HOST:PORT] [--budget-usd X]\n"
    "       trinity sweep status DIR [--json]"
)


def _printer(as_json: bool):
    def on_event(ev: dict[str, Any]) -> None:
        if as_json:
            print(json.dumps(ev, ensure_ascii=False), flush=True)
        elif ev.get("type") == "trial":
            acc = ev.get("best_val_acc")
            acc_s = f"  best val {acc:.3f}" if isinstance(acc, float) else ""
            err = f"  — {ev['error']}" if ev.get("error") else ""
            print(f"trial {ev['trial']} ({ev.get('label')}): {ev['state']}{acc_s}{err}", flush=True)
        elif ev.get("type") == "log":
            print(ev.get("message", ""), flush=True)

    return on_event


def print_status(doc: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    counts = ", ".join(f"{n} {s}" for s, n in sorted(doc.get("counts", {}).items()))
    budget = doc.get("budget_usd")
    spend = f"  spent ${doc.get('spent_usd', 0.0):.6f}" + (f" of ${budget:.4f}" if budget is not None else "")
    print(f"sweep {doc.get('id')}: {doc.get('status')}  {len(doc['trials'])} trials ({counts}){spend}")
    for t in doc["trials"]:
        acc = t.get("best_val_acc")
        acc_s = f"{acc:.3f}" if isinstance(acc, float) else "  -  "
        err = f"  {t['error']}" if t.get("error") else ""
        print(
            f"  {t['id']}  {t['state']:<11} gen {t.get('generations', 0):>4}  val {acc_s}  "
            f"${float(t.get('cost_usd') or 0):.6f}  {t.get('label', '')}{err}"
        )
    if doc.get("best"):
        print(f"best: {doc['best']['trial']} (validation accuracy {doc['best']['best_val_acc']:.3f})")


def cmd_sweep(args: argparse.Namespace) -> int:
    # lazy: brings trinity.optim and the pool budget, kept off the CLI start
    from trinity.optim.raysupport import require_ray
    from trinity.sweep.runner import new_sweep, run_sweep, sweep_status  # lazy: numpy + pydantic kept off the CLI start

    target = list(args.target)
    verb = target[0]
    if verb in ("resume", "status"):
        if len(target) != 2:
            raise ConfigError(f"usage: trinity sweep {verb} DIR")
        if verb == "status":
            doc = sweep_status(target[1])
            print_status(doc, args.json)
            return 0
        if args.generations is not None and not args.trials:
            raise ConfigError("--generations applies to the trials named with --trial ID")
        require_ray()
        over = {"generations": args.generations} if args.generations is not None else None
        doc = run_sweep(
            target[1],
            address=args.address,
            num_cpus=args.num_cpus,
            budget_usd=args.budget_usd,
            on_event=_printer(args.json),
            trials=args.trials,
            overrides=over,
        )
        if args.trials:
            if not args.json:
                print_status(doc, False)
            states = {t["id"]: t["state"] for t in doc["trials"]}
            return 0 if all(states.get(t) == "finished" for t in args.trials) else 1
    else:
        if len(target) != 1:
            raise ConfigError(f"usage:\n{USAGE}")
        if Path(verb).is_dir():  # `trinity sweep DIR [--json]`: the status of an existing sweep
            print_status(sweep_status(verb), args.json)
            return 0
        if args.trials or args.generations is not None:
            raise ConfigError("--trial / --generations go with `trinity sweep resume DIR`")
        if not args.run_dir:
            raise ConfigError("trinity sweep SPEC.yaml needs --run-dir DIR (where the sweep and its trials go)")
        require_ray()  # before the sweep dir is created
        sd = new_sweep(verb, args.run_dir, budget_usd=args.budget_usd)
        doc = run_sweep(sd.path, address=args.address, num_cpus=args.num_cpus, on_event=_printer(args.json))
    if not args.json:
        print_status(doc, False)
    return 0 if doc["status"] == "finished" else 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="a grid / random sweep of training runs on Ray (the [ray] extra)",
        description="Run a sweep: every trial is an ordinary run dir under DIR/trials/.\n" + USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "target",
        nargs="+",
        metavar="SPEC|resume DIR|status DIR",
        help="a sweep spec (YAML), or resume/status and a sweep directory",
    )
    p.add_argument("--run-dir", help="the sweep directory to create (new sweeps)")
    p.add_argument("--address", help="HOST:PORT of a running Ray cluster (default: a local Ray instance)")
    p.add_argument("--num-cpus", type=int, dest="num_cpus", help="CPUs of the local Ray instance (default: all)")
    p.add_argument(
        "--budget-usd",
        type=float,
        dest="budget_usd",
        help="one budget for the whole sweep (live trials reserve every call's worst case from it)",
    )
    p.add_argument(
        "--trial",
        action="append",
        dest="trials",
        metavar="ID",
        help="sweep resume: only this trial (repeatable), under the sweep's budget",
    )
    p.add_argument("--generations", type=int, help="sweep resume --trial: generations in all for those trials")
    p.add_argument("--json", action="store_true", help="events / status as JSON")
    p.set_defaults(func=cmd_sweep)


def route_trial_resume(sub: Any) -> None:
    """`trinity resume RUN` of a sweep's trial goes under the sweep's budget: wrap the resume
    command's handler (optim's; optim sits below sweep and cannot know of sweeps, so the CLI's
    composition root calls this once every module has registered)."""
    resume = sub.choices["resume"]
    plain = resume.get_default("func")
    resume.set_defaults(func=lambda a: resume_in_sweep(a, plain))


# of the resumable keys (trinity.config.RESUMABLE_KEYS), those `trinity resume RUN`'s flags may not
# change on a trial resumed through its sweep: its cache and its placement (workers, ray_address: refused)
SWEEP_HELD_KEYS = ("cache_path", "workers", "ray_address")


def resume_in_sweep(args: argparse.Namespace, plain: Any) -> int:
    """`trinity resume RUN`: a trial of a sweep with a budget is resumed by the sweep (one driver,
    one budget holder with the spend of all its trials' ledgers); any other run as before."""
    # lazy: brings trinity.optim and the pool budget, kept off the CLI start
    from trinity.config import RESUMABLE_KEYS  # lazy: pydantic would slow every CLI start
    from trinity.optim.raysupport import require_ray

    # lazy: numpy + pydantic kept off the CLI start
    from trinity.sweep.runner import run_sweep, sweep_of_trial, trial_resume_command

    found = sweep_of_trial(args.run_dir)
    if found is None or found[2].get("budget_usd") is None:
        return int(plain(args) or 0)
    sd, tid, doc = found
    other = [k for k in ("workers", "ray_address") if getattr(args, k, None) is not None]
    if other:
        raise ConfigError(
            f"{', '.join('--' + k.replace('_', '-') for k in other)}: not for a trial resumed "
            f"through its sweep; use `{trial_resume_command(sd, tid)}`"
        )
    keys = [k for k in RESUMABLE_KEYS if k not in SWEEP_HELD_KEYS]
    over = {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}
    print(
        f"{Path(args.run_dir).name} is trial {tid} of sweep {sd.path.name}, which has one budget for its "
        f"trials (${doc['budget_usd']:.4f}): resuming it under that budget, as `{trial_resume_command(sd, tid)}`",
        file=sys.stderr,
        flush=True,
    )

    require_ray()
    out = run_sweep(
        sd.path, on_event=_printer(bool(getattr(args, "json", False))), trials=[tid], overrides=over or None
    )
    state: dict[str, Any] = next((t for t in out["trials"] if t["id"] == tid), {})
    if state.get("state") != "finished" and not getattr(args, "json", False):
        print(
            f"trial {tid}: {state.get('state')}" + (f" — {state['message']}" if state.get("message") else ""),
            file=sys.stderr,
        )
    return 0 if state.get("state") == "finished" else 1
