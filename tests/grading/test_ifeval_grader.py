"""IFEval: Google's instruction checkers (if-verifiable), prompt-level strict."""

from __future__ import annotations

import pytest

from trinity.errors import InputError, TrinityError
from trinity.grading import extract_answer, grade
from trinity.grading import ifeval as ifeval_grading

END = "Is there anything else I can help with?"

# (instruction id, kwargs, response, followed) — right, wrong and near misses
CASES = [
    ("punctuation:no_comma", {}, "Hello there friend", True),
    ("punctuation:no_comma", {}, "Hello, friend", False),
    ("length_constraints:number_words", {"relation": "at least", "num_words": 5}, "one two three four five", True),
    ("length_constraints:number_words", {"relation": "at least", "num_words": 5}, "one two three four", False),
    ("length_constraints:number_words", {"relation": "less than", "num_words": 5}, "one two three four", True),
    ("length_constraints:number_words", {"relation": "less than", "num_words": 5}, "one two three four five", False),
    ("change_case:english_lowercase", {}, "all lower case here", True),
    ("change_case:english_lowercase", {}, "all lower case here except I", False),
    ("change_case:english_capital", {}, "ALL CAPS HERE", True),
    ("change_case:english_capital", {}, "ALL CAPS HEREe", False),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "*one* and *two*", True),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "*one* and ** ", False),
    ("detectable_format:json_format", {}, '```json\n{"a": 1}\n```', True),
    ("detectable_format:json_format", {}, '{"a": 1,}', False),
    ("startend:end_checker", {"end_phrase": END}, f"Tip. {END}  ", True),
    ("startend:end_checker", {"end_phrase": END}, f"Tip. {END} Thanks", False),
    ("startend:end_checker", {"end_phrase": "Bye."}, "ok bye.", True),  # case-insensitive
    ("keywords:existence", {"keywords": ["focus", "break"]}, "Focus, then take a break.", True),
    ("keywords:existence", {"keywords": ["focus", "break"]}, "Focus hard.", False),
    ("keywords:forbidden_words", {"forbidden_words": ["very"]}, "It is quite good.", True),
    ("keywords:forbidden_words", {"forbidden_words": ["very"]}, "It is Very good.", False),
    ("keywords:letter_frequency", {"letter": "z", "let_frequency": 2, "let_relation": "at least"}, "zigzag", True),
    ("keywords:letter_frequency", {"letter": "z", "let_frequency": 3, "let_relation": "at least"}, "zigzag", False),
    ("detectable_format:title", {}, "<<My Poem>>\nroses", True),
    ("detectable_format:title", {}, "<My Poem>\nroses", False),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* a\n* b", True),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* a\n* b\n* c", False),
    ("startend:quotation", {}, '"quoted all"', True),
    ("startend:quotation", {}, '"quoted" not all', False),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Body.\nP.S. bye", True),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Body. PS bye", False),
    ("combination:two_responses", {}, "first******second", True),
    ("combination:two_responses", {}, "same******same", False),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "one\n***\ntwo", True),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "one\n\ntwo", False),
    ("detectable_format:constrained_response", {}, "My answer is yes.", True),
    ("detectable_format:constrained_response", {}, "Sure.", False),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Say hi."}, "Say hi. Hi!", True),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Say hi."}, "Hi! Say hi.", False),
    (
        "language:response_language",
        {"language": "fr"},
        "Bonjour, je m'appelle Marie et j'habite à Paris depuis dix ans avec ma famille.",
        True,
    ),
    (
        "language:response_language",
        {"language": "fr"},
        "Hello, my name is Marie and I have lived in Paris for ten years with my family.",
        False,
    ),
]


@pytest.mark.parametrize("iid,kwargs,response,followed", CASES)
def test_table(iid, kwargs, response, followed):
    gold = {"instruction_id_list": [iid], "kwargs": [kwargs], "prompt": "Say hi."}
    v = grade("ifeval", response, gold)
    assert v.correct is followed, (iid, response, v)


def test_strict_means_every_instruction():
    gold = {
        "instruction_id_list": ["punctuation:no_comma", "change_case:english_lowercase"],
        "kwargs": [{}, {}],
        "prompt": "p",
    }
    assert grade("ifeval", "all fine here", gold).correct
    v = grade("ifeval", "All fine here", gold)
    assert not v.correct and v.reason == "followed 1/2; not change_case:english_lowercase"
    assert not grade("ifeval", "   ", gold).correct  # an empty reply follows nothing
    assert extract_answer("ifeval", "whole reply") == "whole reply"


def test_bad_gold():
    with pytest.raises(InputError, match="unknown instruction"):
        grade("ifeval", "x", {"instruction_id_list": ["made:up"], "kwargs": [{}]})
    with pytest.raises(InputError, match="one per instruction"):
        grade("ifeval", "x", {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}, {}]})
    # a missing argument would make the checker draw one at random: refused
    with pytest.raises(InputError, match="lacks argument.*num_words"):
        grade(
            "ifeval",
            "x",
            {"instruction_id_list": ["length_constraints:number_words"], "kwargs": [{"relation": "at least"}]},
        )
    with pytest.raises(InputError, match="bad arguments"):
        grade(
            "ifeval",
            "x",
            {
                "instruction_id_list": ["length_constraints:number_words"],
                "kwargs": [{"relation": "about", "num_words": 3}],
            },
        )


def test_sentence_checker_without_nltk_data_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(ifeval_grading, "punkt_available", lambda: False)
    gold = {
        "instruction_id_list": ["length_constraints:number_sentences"],
        "kwargs": [{"relation": "less than", "num_sentences": 3}],
        "prompt": "p",
    }
    with pytest.raises(TrinityError, match="punkt_tab.*nltk.downloader punkt_tab"):
        grade("ifeval", "One. Two.", gold)
