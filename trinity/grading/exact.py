"""Exact-match grader for BIG-Bench Hard: each task's own answer form.

    grade_exact(response, gold) -> Verdict      gold = {"target": "(B)" | "True" | "valid" | ..., "form": FORM}
    extract_exact(text, form) -> str | None     the answer in the form the task writes it

BBH scores exact string match against the target. A model that reasons first writes its answer
last, in many shapes (`the answer is (B)`, `Answer: **Yes**.`, `\\boxed{24}`), so the final
answer is read first and then put in the task's form before the comparison:

    choice         "(A)" … "(R)" — the option letter (reasoning_about_colored_objects has 18 options)
    true_false     boolean_expressions: "True" / "False"
    yes_no         causal_judgement, navigate, sports_understanding, web_of_lies: "Yes" / "No"
    valid_invalid  formal_fallacies: "valid" / "invalid"
    integer        multistep_arithmetic_two, object_counting: an integer (may be negative)
    brackets       dyck_languages: the closing brackets, e.g. "] ) }" (spacing ignored)
    words          word_sorting: the words in order, space-separated (case and commas ignored)

Where the final answer is: after the last `answer is` / `answer:` lead with something after it,
else the last `\\boxed{…}`, else the last non-empty line. Within it, the first token of the form
counts (`Answer: No, because …` is "No"; `invalid` is never read as `valid`). No answer of the
form there means wrong. BBH is pure text: nothing is executed.

No kept library grades BBH's free-form answers (lm-eval's BBH tasks use regex filters inside its
task YAMLs, not an importable grader), so the rules are written here, with a table of cases in
tests/grading/test_exact_grader.py.
"""

from __future__ import annotations

import re

from trinity.grading.choice import extract_choice
from trinity.grading.verdict import Verdict

BBH_LETTERS = "ABCDEFGHIJKLMNOPQR"

FORMS = ("choice", "true_false", "yes_no", "valid_invalid", "integer", "brackets", "words")

# The 27 BBH tasks (lukaemon/bbh configs) and the form each writes its target in.
BBH_TASK_FORMS: dict[str, str] = {
    "boolean_expressions": "true_false",
    "causal_judgement": "yes_no",
    "date_understanding": "choice",
    "disambiguation_qa": "choice",
    "dyck_languages": "brackets",
    "formal_fallacies": "valid_invalid",
    "geometric_shapes": "choice",
    "hyperbaton": "choice",
    "logical_deduction_five_objects": "choice",
    "logical_deduction_seven_objects": "choice",
    "logical_deduction_three_objects": "choice",
    "movie_recommendation": "choice",
    "multistep_arithmetic_two": "integer",
    "navigate": "yes_no",
    "object_counting": "integer",
    "penguins_in_a_table": "choice",
    "reasoning_about_colored_objects": "choice",
    "ruin_names": "choice",
    "salient_translation_error_detection": "choice",
    "snarks": "choice",
    "sports_understanding": "yes_no",
    "temporal_sequences": "choice",
    "tracking_shuffled_objects_five_objects": "choice",
    "tracking_shuffled_objects_seven_objects": "choice",
    "tracking_shuffled_objects_three_objects": "choice",
    "web_of_lies": "yes_no",
    "word_sorting": "words",
}

_LEAD = re.compile(r"(?:final\s+)?answer\s*(?:is\s*:?|:|=)\s*", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\s*\{((?:[^{}]|\{[^{}]*\})*)\}")
_MARKUP = re.compile(r"[*_`$]|\\text(?:bf)?\{|\\mathrm\{")
_WORDS = {
    "true_false": {"true": "True", "false": "False"},
    "yes_no": {"yes": "Yes", "no": "No"},
    "valid_invalid": {"valid": "valid", "invalid": "invalid"},
}
_BRACKET_CHARS = set("()[]{}<>")


def final_segment(text: str) -> str:
    """The part of `text` that states the final answer (see the module docstring)."""
    if not isinstance(text, str) or not text.strip():
        return ""
    for lead in reversed(list(_LEAD.finditer(text))):
        after = text[lead.end() :].strip()
        if after:
            line = after.splitlines()[0].strip()
            if line and _MARKUP.sub("", line).strip(" .:"):
                return line
    boxed = _BOXED.findall(text)
    if boxed:
        return boxed[-1].strip()
    return next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")


def extract_exact(text: str, form: str) -> str | None:
    """The answer `text` gives, written as the task writes its targets, or None."""
    if form not in FORMS:
        raise ValueError(f"unknown BBH answer form {form!r}: use one of {', '.join(FORMS)}")
    if not isinstance(text, str) or not text.strip():
        return None
    if form == "choice":
        letter = extract_choice(text, BBH_LETTERS)
        if letter is None:  # "the answer is (B) blue" is caught above; "(B)" alone on the last line too
            m = re.search(r"\(([A-R])\)", final_segment(text))
            letter = m.group(1) if m else None
        return f"({letter})" if letter else None
    seg = _MARKUP.sub("", final_segment(text))
    if form in _WORDS:
        for word in re.findall(r"[A-Za-z]+", seg):
            hit = _WORDS[form].get(word.lower())
            if hit:
                return hit
        return None
    if form == "integer":
        m = re.search(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?", seg)
        if not m:
            return None
        number = m.group(0).replace("−", "-").replace(",", "")
        whole, _, frac = number.partition(".")
        return str(int(whole)) if not frac.strip("0") else number
    if form == "brackets":
        closing = "".join(ch for ch in seg if ch in _BRACKET_CHARS)
        return " ".join(closing) if closing else None
    words = re.findall(r"[A-Za-z0-9'&-]+", seg.lower())
    return " ".join(words) if words else None


def normalize_target(target: str, form: str) -> str:
    """A dataset target in the same normal form as `extract_exact`'s answers."""
    t = str(target).strip()
    if form == "choice":
        m = re.fullmatch(r"\(?([A-Ra-r])\)?", t)
        return f"({m.group(1).upper()})" if m else t
    if form in _WORDS:
        return _WORDS[form].get(t.lower(), t)
    if form == "integer":
        return str(int(t)) if re.fullmatch(r"-?\d+", t) else t
    if form == "brackets":
        return " ".join(ch for ch in t if ch in _BRACKET_CHARS)
    return " ".join(t.lower().split())


def grade_exact(response: str, gold: dict) -> Verdict:
    form = gold.get("form")
    if form not in FORMS:
        raise ValueError(f"BBH gold needs 'form' in {', '.join(FORMS)}, got {form!r}")
    want = normalize_target(gold.get("target", ""), form)
    got = extract_exact(response or "", form)
    if got is None:
        return Verdict(False, f"no {form.replace('_', '/')} answer found", None)
    if got == want:
        return Verdict(True, "match", got)
    return Verdict(False, f"answered {got[:80]}, gold {want[:80]}", got)
