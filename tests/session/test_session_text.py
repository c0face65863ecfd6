import pytest

from trinity.benchmarks.prompts import SYSTEM_PROMPTS, user_message
from trinity.session.transcript import Trajectory, Turn, parse_verdict, trim_output


@pytest.mark.parametrize(
    "text, verdict",
    [
        ("Looks right.\nVERDICT: ACCEPT", "ACCEPT"),
        ("**VERDICT: ACCEPT**", "ACCEPT"),
        ("**VERDICT:** ACCEPT", "ACCEPT"),
        ("### Verdict - accept", "ACCEPT"),
        ("Verdict: **Accept**", "ACCEPT"),
        ("VERDICT: ACCEPTABLE", "REVISE"),  # not ACCEPT
        ("VERDICT: ACCEPTED", "REVISE"),
        ("VERDICT: REVISE\nthen again\nVERDICT: ACCEPT", "ACCEPT"),  # last verdict line wins
        ("VERDICT: ACCEPT\nVERDICT: REVISE", "REVISE"),
        ("I accept this answer.", "REVISE"),  # no verdict line
        ("", "REVISE"),
    ],
)
def test_parse_verdict(text, verdict):
    assert parse_verdict(text) == verdict


def test_trim_keeps_head_and_tail():
    text = "HEAD" + "x" * 20000 + "\\boxed{42}"
    out = trim_output(text, 8000)
    assert len(out) <= 8000 and out.startswith("HEAD") and out.endswith("\\boxed{42}")
    assert trim_output("short") == "short"


def test_roles_named_in_first_line_and_query_block():
    for role, prompt in SYSTEM_PROMPTS.items():
        assert prompt.splitlines()[0].startswith(f"You are the {role}")
    msg = user_message("What is 2+2?", "")
    assert msg.startswith("QUERY:\nWhat is 2+2?\n\nTRANSCRIPT SO FAR:")


def test_transcript_format_and_worker_detection():
    tr = Trajectory(candidate=0, qid="q")
    tr.turns.append(Turn("m1", "Thinker", [1.0], [1.0, 0, 0], output="plan"))
    assert tr.has_plan() and not tr.has_worker_output()
    tr.turns.append(Turn("m2", "Worker", [1.0], [0, 1.0, 0], output="\\boxed{4}"))
    assert tr.has_worker_output()
    assert tr.transcript() == "[Turn 1 | Thinker | m1]\nplan\n\n[Turn 2 | Worker | m2]\n\\boxed{4}"
    assert tr.encoder_turns() == [("Thinker", "m1", "plan"), ("Worker", "m2", "\\boxed{4}")]
