"""LiveCodeBench code generation (livecodebench/code_generation_lite).

Row schema: question_title, question_content, platform, question_id, contest_id, contest_date,
starter_code, difficulty, public_test_cases (JSON string), private_test_cases (JSON string, or
base64 of zlib of a pickled JSON string), metadata (JSON string with func_name).

Releases are cumulative: `release_vN` = `test.jsonl` + `test2.jsonl` + … + `testN.jsonl`. We
train on one release and test only on problems that are NOT in it and were released after a date
(default: the newest contest date in the training release), so test ⊄ train. Each question
carries `lcb_split` ("train" | "test"); `split()` keeps that and carves validation out of train.

Question id `livecodebench-<question_id>` (stable across releases). Gold = `{"tests": [...],
"fn_name"?}` with public tests first, then private ones.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import pickle
import zlib
from datetime import date, datetime
from pathlib import Path
from typing import Any

from trinity.benchmarks.base import Benchmark
from trinity.benchmarks.sources import download_hub_file, read_rows_file
from trinity.data.questions import Question, split_ids
from trinity.errors import InputError

REPO = "livecodebench/code_generation_lite"
FILES = ["test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl", "test6.jsonl"]
RELEASES = {f"release_v{i}": FILES[:i] for i in range(1, len(FILES) + 1)}
RELEASES["release_latest"] = list(FILES)
FILE_RELEASE = {f: f"release_v{i}" for i, f in enumerate(FILES, start=1)}  # where a file first appears
MAX_DECODED_BYTES = 512 * 1024 * 1024  # a zlib bomb stops here
TESTTYPES = ("stdin", "functional")


class _NoGlobalsUnpickler(pickle.Unpickler):
    """Unpickles plain containers and scalars only: any class or function reference is refused,
    so a crafted pickle cannot call anything."""

    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: test cases must be plain data")


def decode_test_cases(blob: object, where: str = "test cases") -> list[dict]:
    """Decode LiveCodeBench test cases: a JSON list, or base64(zlib(pickle(JSON string)))."""
    if blob is None:
        return []
    if not isinstance(blob, str):
        raise InputError(f"{where}: expected a string, got {type(blob).__name__}")
    s = blob.strip()
    if not s:
        return []
    if s[0] in "[{":
        try:
            obj: Any = json.loads(s)
        except json.JSONDecodeError as e:
            raise InputError(f"{where}: not valid JSON ({e.msg})") from None
    else:
        try:
            packed = base64.b64decode(s, validate=True)
            d = zlib.decompressobj()
            raw = d.decompress(packed, MAX_DECODED_BYTES)
            if d.unconsumed_tail:
                raise InputError(f"{where}: decompressed test cases exceed {MAX_DECODED_BYTES >> 20} MiB")
        except (binascii.Error, ValueError, zlib.error) as e:
            raise InputError(f"{where}: neither JSON nor base64/zlib data ({e})") from None
        try:
            obj = _NoGlobalsUnpickler(io.BytesIO(raw)).load()
        except pickle.UnpicklingError as e:
            raise InputError(f"{where}: unsafe or corrupt pickle ({e})") from None
        except Exception as e:  # noqa: BLE001 — truncated pickles raise EOFError, ValueError …
            raise InputError(f"{where}: corrupt pickle ({type(e).__name__})") from None
        if isinstance(obj, bytes):
            obj = obj.decode("utf-8", "replace")
        if isinstance(obj, str):
            try:
                obj = json.loads(obj)
            except json.JSONDecodeError as e:
                raise InputError(f"{where}: pickled text is not JSON ({e.msg})") from None
    if not isinstance(obj, list):
        raise InputError(f"{where}: expected a list of test cases, got {type(obj).__name__}")
    tests = []
    for j, t in enumerate(obj):
        if not isinstance(t, dict) or "input" not in t or "output" not in t:
            raise InputError(f"{where}: test {j} lacks input/output")
        testtype = t.get("testtype", "stdin")
        if testtype not in TESTTYPES:
            raise InputError(f"{where}: test {j} has testtype {testtype!r} (expected stdin or functional)")
        tests.append({"input": str(t["input"]), "output": str(t["output"]), "testtype": testtype})
    return tests


def parse_date(value: Any, what: str) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        return datetime.fromisoformat(str(value).strip().replace("Z", "+00:00")).date()
    except ValueError:
        raise InputError(f"{what}: {value!r} is not a date (use YYYY-MM-DD)") from None


def _release_index(release: str) -> int:
    if release not in RELEASES:
        raise InputError(f"unknown LiveCodeBench release {release!r}: use one of {', '.join(RELEASES)}")
    return len(RELEASES[release])


class LiveCodeBench(Benchmark):
    name = "livecodebench"
    kind = "code"
    source = f"{REPO} (release_v1 … release_v6)"
    size = "1,055 problems in release_v6"
    licence = "CC (per its dataset card)"
    grader = "code: stdin/functional tests in the sandbox"
    required_fields = ("question_id", "question_content", "contest_date", "public_test_cases")

    def __init__(self) -> None:
        self.last_load_info: dict[str, Any] = {}

    # rows, each tagged with the release it first appeared in (None when unknown)
    def read_rows(self, data, release: str = "release_latest", **opts):
        _release_index(release)  # validates the name
        files = RELEASES[release]
        if data is None:
            return self._tagged([(f, read_rows_file(download_hub_file(REPO, f), f"LiveCodeBench {f}")) for f in files])
        path = Path(data)
        if path.is_dir():
            if release == "release_latest":  # a local folder: the newest release it holds
                files = [f for f in FILES if (path / f).exists()] or FILES[:1]
            missing = [f for f in files if not (path / f).exists()]
            if missing:
                raise InputError(f"{path}: {release} needs {', '.join(files)}; missing {', '.join(missing)}")
            return self._tagged([(f, read_rows_file(path / f, f"LiveCodeBench {f}")) for f in files])
        rows = read_rows_file(path, "LiveCodeBench")
        for row in rows:  # a single file: a `release` column (e.g. added by the user) is kept
            row.setdefault("_release", row.get("release"))
        return rows

    @staticmethod
    def _tagged(parts: list[tuple[str, list[dict]]]) -> list[dict]:
        out = []
        for f, rows in parts:
            for row in rows:
                row["_release"] = FILE_RELEASE[f]
                out.append(row)
        return out

    def to_questions(
        self,
        rows,
        where,
        release: str = "release_latest",
        train_release: str | None = "release_v1",
        test_after: Any = None,
        train_before: Any = None,
        **opts,
    ):
        parsed = [self._question(row, i, where) for i, row in enumerate(rows)]
        seen: set[str] = set()
        for q in parsed:
            if q.id in seen:
                raise InputError(f"{where}: question_id {q.extra['question_id']!r} appears twice")
            seen.add(q.id)
        return self._assign_splits(parsed, where, train_release, test_after, train_before)

    def _question(self, row: dict, i: int, where: str) -> Question:
        self.check_fields(row, i, where)
        qid = str(row["question_id"]).strip()
        if not qid:
            raise InputError(f"{where}: row {i} has an empty question_id")
        here = f"{where}: row {i} ({qid})"
        public = decode_test_cases(row.get("public_test_cases"), f"{here} public_test_cases")
        tests = public + decode_test_cases(row.get("private_test_cases"), f"{here} private_test_cases")
        if not tests:
            raise InputError(f"{here}: no test cases")
        meta = row.get("metadata") or "{}"
        try:
            meta = json.loads(meta) if isinstance(meta, str) else dict(meta)
        except (json.JSONDecodeError, TypeError, ValueError):
            raise InputError(f"{here}: metadata is not a JSON object") from None
        answer: dict[str, Any] = {"tests": tests}
        fn_name = meta.get("func_name") if isinstance(meta, dict) else None
        if fn_name:
            answer["fn_name"] = str(fn_name)
        if any(t["testtype"] == "functional" for t in tests) and not fn_name:
            raise InputError(f"{here}: functional tests but no func_name in metadata")
        contest_date = parse_date(row["contest_date"], f"{here} contest_date")
        extra = {
            "question_id": qid,
            "title": row.get("question_title") or "",
            "platform": row.get("platform") or "",
            "contest_id": row.get("contest_id") or "",
            "contest_date": contest_date.isoformat(),
            "difficulty": row.get("difficulty") or "",
            "starter_code": row.get("starter_code") or "",
            "release": row.get("_release"),
            "n_public_tests": len(public),
        }
        if fn_name:
            extra["fn_name"] = str(fn_name)
        return Question(f"livecodebench-{qid}", self.name, str(row["question_content"]), answer, "code", extra)

    def _assign_splits(
        self, qs: list[Question], where: str, train_release: str | None, test_after: Any, train_before: Any
    ) -> list[Question]:
        """Tag each question train/test so that no test problem is in the training release and
        every test problem is dated after `test_after`; problems in neither are dropped."""
        if train_release is None and train_before is None:
            self.last_load_info = {"train": 0, "test": 0, "dropped": 0, "untagged": len(qs)}
            return qs
        if train_before is not None:
            cut = parse_date(train_before, "--train-before")
            in_train = [parse_date(q.extra["contest_date"], q.id) < cut for q in qs]
        else:
            assert train_release is not None  # neither set returned above
            if any(q.extra.get("release") is None for q in qs):
                raise InputError(
                    f"{where}: rows carry no release (a single file); pass a folder with "
                    f"{', '.join(FILES[:2])} … or choose the training set with --train-before DATE"
                )
            k = _release_index(train_release)
            in_train = [_release_index(q.extra["release"]) <= k for q in qs]
        train_dates = [parse_date(q.extra["contest_date"], q.id) for q, t in zip(qs, in_train) if t]
        if not train_dates:
            raise InputError(f"{where}: no problems in the training set ({train_release or train_before})")
        after = parse_date(test_after, "--test-after") if test_after is not None else max(train_dates)
        out, dropped = [], 0
        for q, t in zip(qs, in_train):
            if t:
                role = "train"
            elif parse_date(q.extra["contest_date"], q.id) > after:
                role = "test"
            else:
                dropped += 1
                continue
            out.append(Question(q.id, q.benchmark, q.question, q.answer, q.kind, {**q.extra, "lcb_split": role}))
        n_test = sum(q.extra["lcb_split"] == "test" for q in out)
        self.last_load_info = {
            "train": len(out) - n_test,
            "test": n_test,
            "dropped": dropped,
            "test_after": after.isoformat(),
        }
        return out

    def render_question(self, q: Question) -> str:
        starter = (q.extra.get("starter_code") or "").strip()
        if starter:
            how = (
                "Complete the following starter code; your solution is called as this function "
                f"(or method):\n```python\n{starter}\n```"
            )
        else:
            how = "Read the input from standard input and write the answer to standard output."
        return f"{q.question.rstrip()}\n\n{how}"

    def split(self, questions: list[Question], seed: int) -> dict[str, list[str]]:
        """train/val from the training release (3:1, by seed), test = the later problems."""
        roles = {q.id: q.extra.get("lcb_split") for q in questions}
        if any(r not in ("train", "test") for r in roles.values()):
            raise InputError(
                "livecodebench questions lack lcb_split; load them with a training release "
                "(--train-release) or --train-before DATE"
            )
        train_pool = [q for q in questions if roles[q.id] == "train"]
        inner = split_ids(train_pool, seed, fractions=(0.75, 0.25, 0.0))
        test = sorted(q.id for q in questions if roles[q.id] == "test")
        return {"train": inner["train"], "val": inner["val"], "test": test}
