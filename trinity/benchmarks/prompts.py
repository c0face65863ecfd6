"""Role system prompts, the question text and the user message of one turn (docs/CONTRACTS.md, Pool and sessions).

Below the pool and the session (the practice server and the session loop both render with it).

Each system prompt names its role in the first line (`You are the <Role> …`): providers see a
plain instruction, and the practice server reads the role from there.
"""

from __future__ import annotations

from trinity.benchmarks import BENCHMARK_NAMES, get_benchmark
from trinity.benchmarks.base import ANSWER_INSTRUCTIONS
from trinity.data.questions import Question

SYSTEM_PROMPTS = {
    "Thinker": (
        "You are the Thinker in a team of models solving one problem together.\n"
        "Analyse the problem and the transcript so far: lay out a plan, point out pitfalls, and "
        "critique earlier attempts. Do NOT give a final answer; another model will write it."
    ),
    "Worker": (
        "You are the Worker in a team of models solving one problem together.\n"
        "Solve the problem completely, using the transcript so far where it helps. {answer_format}"
    ),
    "Verifier": (
        "You are the Verifier in a team of models solving one problem together.\n"
        "Check the latest answer in the transcript step by step. End with exactly one line: "
        "'VERDICT: ACCEPT' if it is correct and complete, or 'VERDICT: REVISE' if it is not."
    ),
}


def answer_format(question: Question) -> str:
    """The benchmark's own answer instruction when its adapter has one, else the kind's. An
    adapter's error propagates: it would otherwise silently change the prompt the models see."""
    if question.benchmark not in BENCHMARK_NAMES:  # a questions file's own benchmark name
        return ANSWER_INSTRUCTIONS[question.kind]
    return get_benchmark(question.benchmark).answer_instruction(question)


def system_prompt(role: str, question: Question) -> str:
    return SYSTEM_PROMPTS[role].format(answer_format=answer_format(question))


def user_message(question_text: str, transcript: str) -> str:
    body = f"QUERY:\n{question_text}\n\nTRANSCRIPT SO FAR:\n"
    return body + (transcript if transcript else "(empty: you are the first turn)")


def render_question(question: Question) -> str:
    """The question text models see (the adapter's rendering when there is one)."""
    if question.benchmark not in BENCHMARK_NAMES:
        return question.question
    return get_benchmark(question.benchmark).render_question(question)


# ---- the messages of a turn under a session protocol (trinity.competition.protocol) ----------


def pool_question(protocol, question: Question) -> str:
    """The question text the pool sees under `protocol`: the competition's rendering (the same
    text its router reads), or, under the open protocol, the adapter's."""
    return render_question(question) if protocol.is_open else protocol.render_question(question)


def turn_messages(protocol, role: str, question: Question, turns, query: str | None = None) -> list[dict]:
    """The chat messages of one turn: `turns` the earlier turns (objects with model, role,
    output, verdict), `query` the question's pool rendering when already made."""
    q = pool_question(protocol, question) if query is None else query
    system = system_prompt(role, question) if protocol.is_open else protocol.system_message(role)
    return [{"role": "system", "content": system}, {"role": "user", "content": protocol.user_message(q, turns)}]


def cached_messages(protocol, question: Question, query: str | None = None) -> list[dict]:
    """The single Worker turn on an empty transcript that cached answers (collect) are made with."""
    return turn_messages(protocol, "Worker", question, [], query)
