"""Multiple-choice grader: find the letter a response commits to; the commitment that ends last wins.

A commitment is one of:
- an answer phrase: `The answer is (C)`, `Answer: C`, `final answer: c`, `the correct option is B`,
  `I choose D`;
- `\\boxed{C}` (also `\\boxed{\\text{C}}`, `\\boxed{(C)}`);
- a bold letter: `**C**`, `**(C)**`, `**C.**`;
- a line that is only the letter: `C`, `(C)`, `C.`.

Not commitments: the article "a" / pronoun "I" (`the answer is a bit tricky`, `Answer: I think B`
— there B wins), letters inside words, and options merely discussed (`Option B is wrong`).
No commitment at all means the response is wrong.
"""

from __future__ import annotations

import re

from trinity.grading.verdict import Verdict

LETTERS = "ABCDEFGHIJ"

# Every repetition below is bounded or over one character class, so no input can make the
# regexes backtrack exponentially (an unbounded `(?:\*\*|\*)*` would on a run of stars).
_S = r"\s{0,8}"  # a little whitespace (a newline included: "Answer:\nC")
# Text that may surround the letter in a commitment: markdown bold/italics, $, \text{, brackets.
_OPEN = r"(?:[\s*_$(\[{]|\\text(?:bf)?\{|\\mathrm\{){0,12}"
_CLOSE = r"(?:[*_$)\]}]|\.(?!\w)){0,12}"
# After the letter: end of text, punctuation, or a space; never a letter/digit (so "Because" or
# "C3" do not match).
_AFTER = r"(?![\w'])"

_ANSWER_PHRASE = (
    rf"(?:\b(?:final\s|correct\s|right\s|best\s)?{_S}answer(?:\s{{1,8}}choice|\s{{1,8}}option)?"
    rf"{_S}(?:(?:is|would\s+be|will\s+be|should\s+be|must\s+be){_S}:?|=|:|-)"
    rf"(?:{_S}(?:option|choice|letter){_S}:?)?"
    rf"|\b(?:correct|right|best)\s{{1,8}}(?:option|choice|letter){_S}(?:is|would\s+be|:)"
    rf"|\bI\s{{1,8}}(?:choose|select|pick|go\s+with)(?:\s{{1,8}}(?:option|choice))?"
    rf"|\b(?:choose|select|pick)\s{{1,8}}(?:option|choice))"
)


def _patterns(letters: str) -> list[tuple[re.Pattern, bool]]:
    """(pattern, case_insensitive_letter) pairs; each has one group: the letter."""
    cls = "".join(sorted(set(letters.upper() + letters.lower())))
    upper = "".join(sorted(set(letters.upper())))
    return [
        (re.compile(_ANSWER_PHRASE + _OPEN + rf"([{cls}])" + _AFTER + _CLOSE, re.IGNORECASE), True),
        (re.compile(r"\\boxed\s*\{\s*(?:\\text(?:bf)?\s*\{\s*)?\(?\s*" + rf"([{cls}])" + r"\s*\)?\s*\}?\s*\}"), True),
        (re.compile(r"\*\*\s*\(?" + rf"([{cls}])" + r"\)?[.:)]?\s*\*\*"), True),
        (re.compile(r"^[ \t>*_#-]*\(?" + rf"([{upper}])" + r"\)?[.:]?[ \t*_]*$", re.MULTILINE), False),
    ]


_COMPILED: dict[str, list[tuple[re.Pattern, bool]]] = {}


def _is_article_or_pronoun(text: str, m: re.Match) -> bool:
    """`a` / `i` / `I` followed by a lower-case word ("a bit", "I think") is English, not an
    option letter. An upper-case `A` followed by a word stays a letter ("A because …")."""
    letter = m.group(1)
    if letter not in ("a", "i", "I"):
        return False
    return bool(re.match(r"[ \t]+[a-z]", text[m.end(1) :]))


def extract_choice(text: str, letters: str = LETTERS) -> str | None:
    """The option letter the text commits to last (upper case), or None."""
    if not isinstance(text, str) or not text:
        return None
    pats = _COMPILED.get(letters)
    if pats is None:
        pats = _COMPILED[letters] = _patterns(letters)
    best: tuple[int, str] | None = None
    for pat, _ in pats:
        for m in pat.finditer(text):
            if _is_article_or_pronoun(text, m):
                continue
            end = m.end(1)
            if best is None or end > best[0]:
                best = (end, m.group(1).upper())
    return best[1] if best else None


def normalize_gold_letter(gold) -> str | None:
    """`"C"`, `"(C)"`, `"c"` or an index `2` -> `"C"`."""
    if isinstance(gold, bool):
        return None
    if isinstance(gold, int):
        return LETTERS[gold] if 0 <= gold < len(LETTERS) else None
    if isinstance(gold, str):
        s = gold.strip().strip("()[]. ").upper()
        if len(s) == 1 and s in LETTERS:
            return s
    return None


def grade_choice(response: str, gold, letters: str = LETTERS) -> Verdict:
    want = normalize_gold_letter(gold)
    if want is None:
        raise ValueError(f"multiple-choice gold must be a letter A-J or an index, got {gold!r}")
    got = extract_choice(response or "", letters)
    if got is None:
        return Verdict(False, "no committed answer letter", None)
    if got == want:
        return Verdict(True, "match", got)
    return Verdict(False, f"answered {got}, gold {want}", got)
