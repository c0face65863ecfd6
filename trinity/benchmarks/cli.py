"""`trinity benchmarks list|export|show`: see and export the benchmark adapters' questions.

    trinity benchmarks list
    trinity benchmarks export math500 --data math500.jsonl --out questions.jsonl [--limit N]
    trinity benchmarks export livecodebench --data lcb_dir/ --train-release release_v1 \
        --split test --seed 0 --out lcb_test.jsonl
    trinity benchmarks show mmlu --data mmlu_test.parquet --index 3

`export` writes our Questions JSONL (`trinity train --questions` reads it).
"""

from __future__ import annotations

import argparse
import sys


def _adapter_opts(args) -> dict:
    opts = {}
    if args.benchmark == "livecodebench":
        opts = {"release": args.release, "train_release": None if args.train_release == "none" else args.train_release,
                "test_after": args.test_after, "train_before": args.train_before}
    return opts


def _load(args):
    from trinity.benchmarks import get_benchmark

    bench = get_benchmark(args.benchmark)
    qs = bench.load(data=args.data, limit=None, **_adapter_opts(args))
    return bench, qs


def _cmd_list(args) -> int:
    from trinity.benchmarks import list_benchmarks

    rows = [b.describe() for b in list_benchmarks()]
    w = {k: max(len(k), *(len(r[k]) for r in rows)) for k in ("name", "kind", "size")}
    print(f"{'name':<{w['name']}}  {'kind':<{w['kind']}}  {'size':<{w['size']}}  source")
    for r in rows:
        print(f"{r['name']:<{w['name']}}  {r['kind']:<{w['kind']}}  {r['size']:<{w['size']}}  {r['source']}")
    print("\nOffline: pass --data FILE (the dataset's own rows, JSONL or parquet; for livecodebench "
          "also a folder with test.jsonl … test6.jsonl).")
    return 0


def _cmd_export(args) -> int:
    from trinity.data.questions import save_questions
    from trinity.errors import InputError

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
    from trinity.errors import InputError

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
    gold = q.answer if q.kind != "code" else f"{len(q.answer['tests'])} tests" + (
        f", fn_name {q.answer['fn_name']}" if q.answer.get("fn_name") else "")
    print(f"id: {q.id}\nkind: {q.kind}\ngold: {gold}\n\n{bench.prompt(q)}")
    return 0


def _add_source_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("benchmark", metavar="NAME", help="math500 | mmlu | livecodebench | practice")
    p.add_argument("--data", metavar="FILE",
                   help="local rows in the dataset's schema (JSONL/parquet; livecodebench: also a folder "
                        "with test.jsonl …); default: the Hugging Face Hub")
    g = p.add_argument_group("livecodebench")
    g.add_argument("--release", default="release_latest", help="release to load (default release_latest)")
    g.add_argument("--train-release", default="release_v1",
                   help="problems of this release form train/val; 'none' = no split tags (default release_v1)")
    g.add_argument("--test-after", metavar="DATE",
                   help="test = problems not in the training release dated after DATE "
                        "(default: the training release's newest contest date)")
    g.add_argument("--train-before", metavar="DATE",
                   help="for a single file without releases: train = problems dated before DATE")


def register(sub) -> None:
    p = sub.add_parser("benchmarks", help="list benchmarks, export their questions")
    bsub = p.add_subparsers(dest="benchmarks_command", metavar="ACTION")
    bsub.required = True

    pl = bsub.add_parser("list", help="the benchmark adapters and their sources")
    pl.set_defaults(func=_cmd_list)

    pe = bsub.add_parser("export", help="write a benchmark's questions as Questions JSONL")
    _add_source_args(pe)
    pe.add_argument("--out", required=True, metavar="FILE", help="Questions JSONL to write")
    pe.add_argument("--limit", type=int, metavar="N", help="only the first N questions")
    pe.add_argument("--split", choices=("all", "train", "val", "test"), default="all",
                    help="only one split (deterministic by --seed; livecodebench: by release/date)")
    pe.add_argument("--seed", type=int, default=0, help="split seed (default 0)")
    pe.set_defaults(func=_cmd_export)

    ps = bsub.add_parser("show", help="print one question as a model sees it, with its gold")
    _add_source_args(ps)
    ps.add_argument("--index", type=int, default=0, help="question index (default 0)")
    ps.add_argument("--id", help="question id (instead of --index)")
    ps.set_defaults(func=_cmd_show)
