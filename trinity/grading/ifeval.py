"""IFEval grader: Google's instruction checkers, from the `if-verifiable` package.

    grade_ifeval(response, gold) -> Verdict
    gold = {"instruction_id_list": [...], "kwargs": [{...}, ...], "prompt": str}

The checkers are Google Research's `instruction_following_eval` code (the IFEval paper's own),
as `if-verifiable` packages them (`if_verifiable.ifeval.INSTRUCTION_DICT`, 25 instructions,
Apache-2.0). The score is IFEval's prompt-level *strict* accuracy: the response is right when it
follows every instruction of its prompt.

Why not lm-eval's copy of the same registry: `lm_eval.tasks.ifeval` cannot be imported alone
(`lm_eval.tasks` imports the task manager, which needs sacrebleu, evaluate, scikit-learn …), and
its `instructions_util` calls `nltk.download` at import time (a network call). `if-verifiable`
is 50 kB and needs only nltk, langdetect and immutabledict for IFEval.

Offline: 23 of the 25 checkers need no data. `length_constraints:number_sentences` and
`change_case:capital_word_frequency` tokenize with NLTK's `punkt_tab` model, which no package
ships and which cannot be downloaded at run time here; grading a prompt that uses one of them
without it is a `TrinityError` saying what to install (never a silent wrong grade), and
`IFEval.preflight` raises it before a collect makes its first call.

langdetect's detector is seeded (0) so that the language check is deterministic.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from trinity.errors import InputError, TrinityError
from trinity.grading.verdict import Verdict

NLTK_RESOURCE = "tokenizers/punkt_tab"
NEEDS_PUNKT = frozenset({"length_constraints:number_sentences", "change_case:capital_word_frequency"})
# langdetect's detector factory loads its language profiles on first use, and concurrent first
# uses see them half-loaded (an English reply detected as another language): checks go one at a time.
_CHECK_LOCK = threading.Lock()
PUNKT_HINT = (
    "run `python -m nltk.downloader punkt_tab` once on a machine with internet (or put NLTK data under $NLTK_DATA)"
)


@functools.cache
def registry() -> dict[str, Any]:
    """instruction id -> checker class (imports if-verifiable on first use)."""
    try:
        import langdetect  # lazy: a missing module is reported, not raised at import

        # lazy: a missing module is reported, not raised at import
        from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT
    except ImportError as e:
        raise TrinityError(
            f"IFEval grading needs the if-verifiable package ({e.name} missing): pip install if-verifiable"
        ) from None
    # langdetect samples at random; a fixed seed makes `language:response_language` give the same
    # verdict for the same text every time (grades are cached by answer text).
    langdetect.DetectorFactory.seed = 0
    return dict(INSTRUCTION_DICT)


def punkt_available() -> bool:
    """Whether NLTK's punkt_tab tokenizer data is installed (the two sentence/word checkers)."""
    try:
        import nltk  # lazy: a missing module is reported, not raised at import

        nltk.data.find(NLTK_RESOURCE)
    except (LookupError, ImportError):
        return False
    return True


def check_gold(gold: Any) -> tuple[list[str], list[dict]]:
    """(instruction ids, their kwargs); InputError for a malformed gold."""
    if not isinstance(gold, dict) or not isinstance(gold.get("instruction_id_list"), list):
        raise InputError('IFEval gold must be {"instruction_id_list": [...], "kwargs": [...]}')
    ids = [str(i) for i in gold["instruction_id_list"]]
    kwargs = gold.get("kwargs") or [{} for _ in ids]
    if not isinstance(kwargs, list) or len(kwargs) != len(ids) or not all(isinstance(k, dict) for k in kwargs):
        raise InputError("IFEval gold 'kwargs' must be a list of objects, one per instruction")
    if not ids:
        raise InputError("IFEval gold has no instructions")
    unknown = [i for i in ids if i not in registry()]
    if unknown:
        raise InputError(f"IFEval gold names unknown instruction(s) {', '.join(unknown)}")
    for iid, kw in zip(ids, kwargs):
        _checker(iid, kw, str(gold.get("prompt") or ""))
    return ids, kwargs


def _checker(instruction_id: str, kwargs: dict, prompt: str):
    """The checker built from its arguments. A missing argument would make the checker draw one
    at random (the registry builds random instructions too), so that is an InputError here."""
    checker = registry()[instruction_id](instruction_id)
    args = {k: v for k, v in kwargs.items() if v is not None}  # the HF rows list every key, mostly null
    try:
        checker.build_description(**args)
        wanted = checker.get_instruction_args()
        if wanted and "prompt" in wanted:  # an instruction built from the prompt itself
            checker.build_description(prompt=prompt)
    except (TypeError, ValueError, KeyError) as e:
        raise InputError(
            f"IFEval instruction {instruction_id}: bad arguments {args!r}"[:200]
            + f" ({type(e).__name__}: {str(e)[:80]})"
        ) from None
    missing = [k for k in (wanted or {}) if k not in args and k != "prompt"]
    if missing:
        raise InputError(f"IFEval instruction {instruction_id} lacks argument(s) {', '.join(missing)}")
    return checker


def follows(instruction_id: str, kwargs: dict, response: str, prompt: str = "") -> bool:
    """Whether `response` follows one instruction (IFEval's strict test)."""
    checker = _checker(instruction_id, kwargs, prompt)
    if instruction_id in NEEDS_PUNKT and not punkt_available():
        raise TrinityError(
            f"IFEval instruction {instruction_id} needs NLTK's punkt_tab data, which is not installed: {PUNKT_HINT}"
        )
    try:
        with _CHECK_LOCK:
            return bool(response.strip()) and bool(checker.check_following(response))
    except LookupError as e:  # another NLTK resource missing
        raise TrinityError(
            f"IFEval instruction {instruction_id} needs NLTK data that is not installed "
            f"({str(e).strip().splitlines()[0][:120]}): {PUNKT_HINT}"
        ) from None
    except (TypeError, ValueError, AttributeError, IndexError, RecursionError):
        return False  # the arguments were checked when built: a reply the checker cannot read fails


def grade_ifeval(response: str, gold: dict) -> Verdict:
    ids, kwargs = check_gold(gold)
    response = response if isinstance(response, str) else ""
    failed = [i for i, kw in zip(ids, kwargs) if not follows(i, kw, response, str(gold.get("prompt") or ""))]
    n = len(ids)
    if not failed:
        return Verdict(True, f"followed {n}/{n} instructions", None)
    return Verdict(False, f"followed {n - len(failed)}/{n}; not {', '.join(failed)[:160]}", None)
