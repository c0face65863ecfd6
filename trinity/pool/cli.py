"""`trinity pool …` and `trinity ledger …`.

trinity pool serve-practice …                                                the simulated pool (trinity.practice.cli)
trinity pool list                                                            pools and models
trinity ledger verify FILE [--head H] [--json]                               check the hash chain
trinity ledger report FILE [--json]                                          totals per model/purpose/day
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from trinity.errors import InputError, TrinityError
from trinity.pool.keys import default_env_file, read_env_file

if TYPE_CHECKING:
    from trinity.pool.ledger import Bucket, LedgerReport

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def register(sub: SubParsers, pool_commands: Sequence[Callable[[SubParsers], None]] = ()) -> None:
    """`trinity pool …` and `trinity ledger …`; `pool_commands` add more `pool` subcommands from
    packages above the pool (the composition root passes the practice simulator's)."""
    p = sub.add_parser("pool", help="model pools: run the simulated practice pool, list pools")
    psub = p.add_subparsers(dest="pool_cmd", metavar="SUBCOMMAND")
    psub.required = True

    for add in pool_commands:  # `pool serve-practice` (trinity.practice.cli), ahead of `list`
        add(psub)

    ls = psub.add_parser("list", help="list the pools of configs/models.yaml")
    ls.add_argument("--models-yaml", default=None, help="another models.yaml")
    ls.set_defaults(func=cmd_list)

    led = sub.add_parser("ledger", help="verify or summarise a hash-chained cost ledger")
    lsub = led.add_subparsers(dest="ledger_cmd", metavar="SUBCOMMAND")
    lsub.required = True
    v = lsub.add_parser("verify", help="check the hash chain; exit 0 and print totals when it holds")
    v.add_argument("file", help="a ledger.jsonl, or a run directory (its ledger.jsonl)")
    v.add_argument(
        "--head",
        default=None,
        help="the head hash recorded elsewhere (checkpoint, summary): also detects records deleted from the end",
    )
    v.add_argument("--json", action="store_true", help="print the report as JSON")
    v.set_defaults(func=cmd_ledger_verify)
    r = lsub.add_parser("report", help="totals per model, per purpose and per day")
    r.add_argument(
        "file",
        help="a ledger.jsonl, a run directory (its ledger.jsonl), or a directory of runs "
        "such as a sweep (every run's ledger below it, summed)",
    )
    r.add_argument("--json", action="store_true", help="print JSON")
    r.set_defaults(func=cmd_ledger_report)


def cmd_list(args: argparse.Namespace) -> int:
    """Each pool, its models in router order, and whether its key is available (never the key)."""
    # lazy: kept off the CLI start (adds PyYAML here)
    from trinity.pool.providers import MODELS_YAML, pool_model_ids, read_models_yaml, section_mapping

    path = Path(args.models_yaml) if args.models_yaml else MODELS_YAML
    doc = read_models_yaml(path)  # ConfigError (one line) for a missing or broken file
    pools = section_mapping(doc.get("pools"), f"{path}: pools")
    aliases = {v: k for k, v in pools.items() if isinstance(v, str)}
    env_file = default_env_file()
    try:
        file_keys = set(read_env_file(env_file)) if env_file.exists() else set()
    except TrinityError as e:
        file_keys = set()
        print(f"note: {e}", file=sys.stderr)
    for name, sec in doc["providers"].items():
        try:
            sec = section_mapping(sec, f"{path}: providers.{name}")
        except TrinityError as e:  # listed with what is wrong; the other pools still are
            print(f"{name}: ({e})")
            continue
        try:
            models = ", ".join(pool_model_ids(name, path))
        except TrinityError as e:  # a pool without models (local) is still listed
            models = f"({e})"
        alias = f" [{aliases[name]}]" if name in aliases else ""
        key_env = sec.get("key_env")
        if not key_env:
            key = "no key needed"
        elif os.environ.get(key_env):
            key = f"${key_env} is set"
        elif key_env in file_keys:
            key = f"{key_env} is in {env_file}"
        else:
            key = f"${key_env} not set" + (" (optional)" if sec.get("key_optional") else "")
        sim = " — SIMULATED" if sec.get("simulated") else ""
        print(f"{name}{alias}{sim}: {models}\n    base URL: {sec.get('base_url') or '(given at start)'}; key: {key}")
    return 0


def _usd(micro: int) -> float:
    return micro / 1e6


def _forecast_vs_actual(ledger_file: str, per_purpose: dict[str, Any]) -> dict[str, Any] | None:
    """The run's forecast.json (written at its start) beside its actual training spend."""
    run = Path(ledger_file).parent
    try:
        f = json.loads((run / "forecast.json").read_text(encoding="utf-8"))
        usd = f["usd"]
        lo, mid, hi = float(usd["p05"]), float(usd["median"]), float(usd["p95"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    actual = float(per_purpose.get("train", {}).get("usd", 0.0))
    # the pool sits below the run directory's records (trinity.runs.records), and this report also
    # reads a ledger outside any run: a tolerant look at summary.json's `generations`, 0 when absent
    try:
        done = int(json.loads((run / "summary.json").read_text(encoding="utf-8")).get("generations") or 0)
    except (OSError, ValueError, AttributeError, TypeError):
        done = 0
    planned = int(f.get("generations") or 0)
    return {
        "p05": lo,
        "median": mid,
        "p95": hi,
        "actual_usd": actual,
        "inside": lo <= actual <= hi,
        "generations": planned,
        "generations_done": done,
        "complete": bool(planned) and done >= planned,
        "measured_from": f.get("measured_from"),
    }


def _tables(rep: LedgerReport) -> dict[str, dict[str, dict[str, object]]]:
    def conv(t: dict[str, Bucket]) -> dict[str, dict[str, object]]:
        return {k: {**v, "usd": _usd(v["micro_usd"])} for k, v in t.items()}

    return {
        "per_model": conv(rep.per_model),
        "per_purpose": conv(rep.per_purpose),
        "per_day": conv(rep.per_day),
        "per_source": conv(rep.per_source),
    }


def _summary_head(ledger_file: str) -> tuple[str | None, str]:
    """The head hash the run recorded in its summary.json next to the ledger, if any."""
    summary = Path(ledger_file).with_name("summary.json")
    # below trinity.runs.records (layers): one field, tolerantly, as `verify_run_ledger` reads it
    try:
        head = json.loads(summary.read_text(encoding="utf-8")).get("ledger_head")
    except (OSError, ValueError, AttributeError):
        return None, ""
    return (head, str(summary)) if isinstance(head, str) and len(head) == 64 else (None, "")


def _ledger_path(arg: str) -> str:
    p = Path(arg)
    return str(p / "ledger.jsonl") if p.is_dir() else arg


def cmd_ledger_verify(args: argparse.Namespace) -> int:
    # lazy: brings sqlite3 and the ledger, kept off the CLI start
    from trinity.pool.ledger import run_anchors, verify_ledger, verify_run_ledger

    run_dir = Path(args.file) if Path(args.file).is_dir() else None
    args.file = _ledger_path(args.file)
    head, anchor = args.head, "--head"
    if head is None and run_dir is None:
        head, anchor = _summary_head(args.file)
    if run_dir is not None and not (run_dir / "ledger.jsonl").exists() and not run_anchors(run_dir):
        raise InputError(
            f"{run_dir} has no ledger.jsonl: nothing to verify (a run that made no paid call has none); "
            "pass a run directory with a ledger or the ledger file itself"
        )
    if run_dir is not None and args.head is None:
        rep = verify_run_ledger(run_dir)  # against the heads in summary.json and the checkpoint
        head, anchor = (rep.head_hash, " and ".join(rep.anchors)) if rep.anchors else (None, "")
    else:
        rep = verify_ledger(args.file, expected_head=head)
    if args.json:
        print(json.dumps(rep.to_json(), indent=2))
        return 0 if rep.ok else 1
    if not rep.ok:
        print(
            f"ledger {args.file}: BROKEN at line {rep.first_bad_line}: {rep.problem} "
            f"({rep.n_records} good records before it)"
        )
        return 1
    print(f"ledger {args.file}: OK — {rep.n_records} records, total ${rep.total_usd:.6f}, head {rep.head_hash}")
    if head is not None and anchor:
        print(f"  the chain reaches the head recorded in {anchor}")
    for model, b in rep.per_model.items():
        print(f"  {model}: {b['calls']} calls, ${_usd(b['micro_usd']):.6f}")
    if rep.per_source.get("invalid"):
        print(
            f"  {rep.per_source['invalid']['calls']} records with invalid provider usage (billed from the "
            "price table; see `trinity ledger report`)"
        )
    if rep.excess:
        print(
            f"  ${rep.excess_usd:.6f} billed above the reserved worst case on {rep.excess_calls} calls "
            "(see `trinity ledger report`)"
        )
    if rep.torn_tail:
        print(
            f"  note: the last line is a torn write ({rep.torn_bytes} bytes, a crash mid-append); it is not "
            "tampering and is set aside when the run resumes"
        )
    return 0


def cmd_ledger_report(args: argparse.Namespace) -> int:
    from trinity.pool.ledger import verify_ledger  # lazy: brings sqlite3 and the ledger, kept off the CLI start

    if Path(args.file).is_dir() and not (Path(args.file) / "ledger.jsonl").exists():
        return _report_many(args)
    args.file = _ledger_path(args.file)
    rep = verify_ledger(args.file)
    out: dict[str, Any] = {
        "file": str(args.file),
        "ok": rep.ok,
        "first_bad_line": rep.first_bad_line,
        "problem": rep.problem,
        "n_records": rep.n_records,
        "total_micro_usd": rep.total_micro_usd,
        "total_usd": rep.total_usd,
        "torn_tail": rep.torn_tail,
        "run_ids": rep.run_ids,
        **_tables(rep),
        "invalid_usage": rep.invalid,
        "excess_billed_usd": rep.excess_usd,
        "excess_calls": rep.excess_calls,
        "excess": {k: {**v, "usd": _usd(v["micro_usd"])} for k, v in rep.excess.items()},
    }
    vs = _forecast_vs_actual(args.file, out["per_purpose"])
    if vs is not None:
        out["forecast"] = vs
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        if vs is not None:
            print(
                f"forecast ${vs['median']:.6f} (90% interval ${vs['p05']:.6f} .. ${vs['p95']:.6f}) vs actual "
                f"training spend ${vs['actual_usd']:.6f}: {'inside' if vs['inside'] else 'OUTSIDE'} the interval"
                + ("" if vs["complete"] else f" (run not finished: {vs['generations_done']} generations so far)")
            )
        if not rep.ok:
            print(
                f"WARNING: the chain is broken at line {rep.first_bad_line} ({rep.problem}); totals cover "
                f"the {rep.n_records} records before it"
            )
        print(f"{rep.n_records} records, total ${rep.total_usd:.6f}")
        if rep.invalid:
            n = rep.per_source["invalid"]["calls"]
            print(f"invalid provider usage: {n} records, billed from the price table (raw figures kept):")
            for r in rep.invalid:
                print(f"  record {r['seq']} {r['model']}: {r['note']}")
        if rep.excess:
            print(
                f"billed above the reserved worst case: ${rep.excess_usd:.6f} on {rep.excess_calls} calls "
                "(the budget cap may be passed by that much):"
            )
            for k, b in rep.excess.items():
                print(f"  {k:40s} {b['calls']:8d} calls  +${_usd(b['micro_usd']):.6f}")
        for title in ("per_model", "per_purpose", "per_day", "per_source"):
            print(title.replace("_", " ") + ":")
            for k, b in out[title].items():
                print(
                    f"  {k:40s} {b['calls']:8d} calls  ${b['usd']:.6f}  "
                    f"{b['prompt_tokens']} in / {b['completion_tokens']} out tokens"
                )
    return 0 if rep.ok else 1


def _report_many(args: argparse.Namespace) -> int:
    """`ledger report DIR` for a directory of runs (a sweep): each run's chain checked on its own,
    the totals summed (money in integer micro-USD, as in the ledgers)."""
    from trinity.pool.ledger import verify_ledger  # lazy: brings sqlite3 and the ledger, kept off the CLI start

    root = Path(args.file)
    files = sorted(root.rglob("ledger.jsonl"))
    if not files:
        raise InputError(f"{root} holds no ledger.jsonl (neither a run directory nor a directory of runs)")
    runs, total, n, ok = [], 0, 0, True
    per_model: dict[str, dict[str, int]] = {}
    for f in files:
        rep = verify_ledger(f)
        ok &= rep.ok
        total += rep.total_micro_usd
        n += rep.n_records
        for model, b in rep.per_model.items():
            acc = per_model.setdefault(model, {"calls": 0, "micro_usd": 0})
            acc["calls"] += b["calls"]
            acc["micro_usd"] += b["micro_usd"]
        runs.append(
            {
                "run": str(f.parent.relative_to(root)),
                "file": str(f),
                "ok": rep.ok,
                "first_bad_line": rep.first_bad_line,
                "problem": rep.problem,
                "n_records": rep.n_records,
                "total_micro_usd": rep.total_micro_usd,
                "total_usd": _usd(rep.total_micro_usd),
            }
        )
    out: dict[str, Any] = {
        "dir": str(root),
        "ok": ok,
        "n_runs": len(files),
        "n_records": n,
        "total_micro_usd": total,
        "total_usd": _usd(total),
        "runs": runs,
        "per_model": {k: {**v, "usd": _usd(v["micro_usd"])} for k, v in per_model.items()},
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0 if ok else 1
    print(f"{len(files)} ledgers, {n} records, total ${_usd(total):.6f}")
    for r in runs:
        flag = "" if r["ok"] else f"  BROKEN at line {r['first_bad_line']}: {r['problem']}"
        print(f"  {r['run']:40s} {r['n_records']:8d} calls  ${r['total_usd']:.6f}{flag}")
    print("per model:")
    for k, b in out["per_model"].items():
        print(f"  {k:40s} {b['calls']:8d} calls  ${b['usd']:.6f}")
    return 0 if ok else 1
