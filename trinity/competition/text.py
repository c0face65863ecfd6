"""What each competition's router reads: its encoder input, turn by turn.

A trained head is only as good as the text it was trained on, and the validator feeds its own.
So the text is the competition's, not ours, and it lives here as data: one frozen `RouterText`
per competition, read from their code (TinyRouter at 1767d1f, MiniRouter at 6a1e0f4):

- the transcript (`orchestration/session.py` `_transcript_text`, both): `"QUERY:\\n{query}"`,
  then per earlier turn `"[Turn {k} | {role} | {name}]\\n{output}"`, the parts joined with a blank
  line (`"\\n\\n"`); the role in lower case (their `Role` enum values), the model by the pool's
  short name (their `configs/models*.yaml` `name`, which is what `pool_models` holds), the output
  post-processed (`roles/postprocess.py`: stripped, then over 8000 characters a head and a tail
  of equal halves around `"\\n... [truncated] ...\\n"`);
- the encoder (`coordinator/slm.py` `encode`): TinyRouter tokenises `transcript + "\\n<Head
  Input>"`, MiniRouter the transcript alone; both without special tokens, then one EOS; the
  feature is the final layer's hidden state at position -2 (the token before EOS: the marker's
  last token in TinyRouter, the transcript's last token in MiniRouter), L2-normalised. No chat
  template, no truncation of the token sequence;
- the query (`adapters/loaders.py` TinyRouter, `orchestration/dataset.py` MiniRouter, identical):
  MMLU / GPQA as `_format_mcq` (stem stripped, blank line, `"A. choice"` lines for A–H, blank
  line, `"Answer with the single letter of the correct option."`); MATH-500's `problem` and
  LiveCodeBench's `question_content` as they are.

This module imports nothing of trinity above `errors`: the model, session and optim layers use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from trinity.errors import ConfigError
from trinity.layout import COMPETITION_HIDDEN, COMPETITION_SVF_PARAMS, N_ROLES

TINYROUTER = "tinyrouter"
MINIROUTER = "minirouter"
HEAD_INPUT_MARKER = "\n<Head Input>"  # TinyRouter's `HEAD_INPUT_SUFFIX`
ELISION_MARKER = "\n... [truncated] ...\n"  # both competitions' `postprocess`
MCQ_LETTERS = "ABCDEFGH"  # both competitions' `_CHOICE_LETTERS`
MCQ_INSTRUCTION = "Answer with the single letter of the correct option."

# Pool model id -> the short name their coordinator reads (their `pool_models`).
TINYROUTER_NAMES = {  # TinyRouter configs/models.yaml (= constants.py DEFAULT_POOL_MODELS, in router order)
    "qwen/qwen3.5-35b-a3b": "qwen3.5-35b-a3b",
    "google/gemini-3.1-flash-lite": "gemini-3.1-flash-lite",
    "deepseek/deepseek-v4-flash": "deepseek-v4-flash",
}
MINIROUTER_CHUTES_NAMES = {  # MiniRouter configs/models.chutes.yaml (the 3-model Chutes pool)
    "deepseek-ai/DeepSeek-V3.2-TEE": "deepseek-v3p2",
    "zai-org/GLM-5-TEE": "glm-5",
    "moonshotai/Kimi-K2.5-TEE": "kimi-k2p5",
}
MINIROUTER_CHUTES_LIGHT_NAMES = {  # configs/models.chutes.light.yaml
    "MiniMaxAI/MiniMax-M2.5-TEE": "minimax-m2p5",
    "google/gemma-4-31B-turbo-TEE": "gemma4-31b-turbo",
    "Qwen/Qwen3-32B-TEE": "qwen3-32b",
}
MINIROUTER_BRIDGE_NAMES = {  # configs/models.minibridge.light.yaml (the 4-model MiniBridge light pool)
    "qwen/qwen3-coder-30b-a3b-instruct": "qwen3-coder-30b",
    "openai/gpt-oss-120b": "gpt-oss-120b",
    "google/gemma-3-4b-it": "gemma-3-4b",
    "nvidia/nemotron-3-ultra-550b-a55b": "nemotron-3-ultra",
}
_MINIROUTER_NAMES = {**MINIROUTER_CHUTES_NAMES, **MINIROUTER_CHUTES_LIGHT_NAMES, **MINIROUTER_BRIDGE_NAMES}

# Pool (our configs/models.yaml provider or alias) -> the competition that runs it.
POOL_COMPETITION = {
    "openrouter": TINYROUTER,
    TINYROUTER: TINYROUTER,
    "chutes": MINIROUTER,
    "minibridge": MINIROUTER,
    MINIROUTER: MINIROUTER,
}
DEFAULT_COMPETITION = TINYROUTER  # any other pool (practice, local, a matrix without a pool)


class QuestionLike(Protocol):
    """What the router text reads of a question (`trinity.data.questions.Question`, a layer
    above this one; its `extra` mapping is read where present, for the choices)."""

    @property
    def benchmark(self) -> str: ...

    @property
    def question(self) -> str: ...


@dataclass(frozen=True)
class RouterText:
    """One competition's router input. `name` is the competition; the rest is its format."""

    name: str
    head_marker: str  # appended to the transcript before tokenising ("" = none)
    model_names: Mapping[str, str]  # pool model id -> name in the transcript
    short_name_is_slug_tail: bool  # an id not in `model_names`: "org/model" -> "model"
    query_prefix: str = "QUERY:\n"
    turn_header: str = "[Turn {k} | {role} | {model}]\n"
    separator: str = "\n\n"
    max_output_chars: int = 8000
    mcq_benchmarks: frozenset[str] = field(default_factory=lambda: frozenset({"mmlu", "gpqa"}))

    # ---- the parts ----

    def model_name(self, model_id: str) -> str:
        name = self.model_names.get(model_id)
        if name is not None:
            return name
        return model_id.rsplit("/", 1)[-1] if self.short_name_is_slug_tail else model_id

    @staticmethod
    def role_name(role: str) -> str:
        return role.lower()

    def output_text(self, raw: str | None) -> str:
        """A model's output as the transcript carries it: stripped; over the limit, a head and a
        tail (the tail one character longer on an odd budget) around the elision marker.
        Idempotent, so text already processed passes unchanged."""
        text = "" if raw is None else raw.strip()
        limit = self.max_output_chars
        if limit <= 0 or len(text) <= limit:
            return text
        if limit <= len(ELISION_MARKER):
            return text[:limit]
        budget = limit - len(ELISION_MARKER)
        head = budget // 2
        return f"{text[:head]}{ELISION_MARKER}{text[len(text) - (budget - head) :]}"

    def render_question(self, question: QuestionLike) -> str:
        """The query text their coordinator reads for a `trinity.data.questions.Question`."""
        choices = (getattr(question, "extra", None) or {}).get("choices")
        if question.benchmark in self.mcq_benchmarks and choices:
            lines = [str(question.question).strip(), ""]
            lines += [f"{letter}. {c}" for letter, c in zip(MCQ_LETTERS, choices)]
            return "\n".join([*lines, "", MCQ_INSTRUCTION])
        return str(question.question)

    # ---- the whole input ----

    def transcript(self, query: str, turns: Iterable[tuple[str, str, str]] = ()) -> str:
        """`turns` holds `(role, model id, output)` of the earlier turns, oldest first."""
        parts = [f"{self.query_prefix}{query}"]
        for k, (role, model, output) in enumerate(turns, start=1):
            header = self.turn_header.format(k=k, role=self.role_name(role), model=self.model_name(model))
            parts.append(header + self.output_text(output))
        return self.separator.join(parts)

    def encoder_input(self, query: str, turns: Iterable[tuple[str, str, str]] = ()) -> str:
        """The string the encoder tokenises (EOS is appended by tokenisation, not here)."""
        return self.transcript(query, turns) + self.head_marker

    def question_input(self, question: QuestionLike, turns: Iterable[tuple[str, str, str]] = ()) -> str:
        return self.encoder_input(self.render_question(question), turns)


ROUTER_TEXTS: Mapping[str, RouterText] = MappingProxyType(
    {
        TINYROUTER: RouterText(TINYROUTER, HEAD_INPUT_MARKER, MappingProxyType(TINYROUTER_NAMES), True),
        MINIROUTER: RouterText(MINIROUTER, "", MappingProxyType(_MINIROUTER_NAMES), False),
    }
)
COMPETITIONS = tuple(ROUTER_TEXTS)


def router_text(name: str | None) -> RouterText:
    """The `RouterText` of a competition name (None: the default, TinyRouter)."""
    key = (name or DEFAULT_COMPETITION).strip().lower()
    try:
        return ROUTER_TEXTS[key]
    except KeyError:
        raise ConfigError(f"unknown competition {name!r}; use one of {', '.join(COMPETITIONS)}") from None


def resolve_competition(name: str | None, pool_name: str | None) -> str:
    """`name` when given (checked), else the competition whose validator runs `pool_name`:
    openrouter -> tinyrouter, chutes / minibridge -> minirouter, anything else -> tinyrouter."""
    if name:
        return router_text(name).name
    return POOL_COMPETITION.get((pool_name or "").strip().lower(), DEFAULT_COMPETITION)


def run_competition(meta: Mapping[str, Any]) -> str:
    """The competition of a run from its run.json: the top-level `competition`, else (a run
    started before runs recorded it) the config's, else the default for its pool."""
    cfg: Mapping[str, Any] = c if isinstance(c := meta.get("config"), Mapping) else {}
    name = meta.get("competition") or cfg.get("competition")
    return resolve_competition(name if isinstance(name, str) else None, cfg.get("pool") or meta.get("pool"))


# ---- θ length ----

HEAD_ROWS_EXTRA = N_ROLES  # role rows (Thinker, Worker, Verifier)
HIDDEN = COMPETITION_HIDDEN  # Qwen3-0.6B
SVF_PARAMS = COMPETITION_SVF_PARAMS  # 7 × 1024
TINYROUTER_N_MODELS = 3  # TinyRouter's gates want head (6, 1024), 13,312 values in all
# The pools MiniRouter's validator runs: models.chutes.yaml (3), models.minibridge.light.yaml (4).
MINIROUTER_POOL_SIZES = MappingProxyType({3: "the 3-model Chutes pool", 4: "the 4-model MiniBridge light pool"})


def theta_length(n_models: int) -> int:
    """Both competitions' rule: `(n_models + 3) * 1024 + 7168`."""
    return (n_models + HEAD_ROWS_EXTRA) * HIDDEN + SVF_PARAMS


def theta_problem(competition: str, n_models: int, n_params: int, hidden: int) -> str | None:
    """Why `competition`'s validator would not take a θ of `n_params` values for an `n_models`
    pool (None when it would). Only judged at the real encoder size (hidden 1024): a test
    encoder's θ is no submission either way."""
    if hidden != HIDDEN:
        return None
    want = theta_length(n_models)
    if n_params != want:
        return (
            f"θ has {n_params} values but {competition} wants (n_models + 3)·1024 + 7168 = {want} for {n_models} models"
        )
    if competition == TINYROUTER and n_models != TINYROUTER_N_MODELS:
        return (
            f"TinyRouter accepts only a {TINYROUTER_N_MODELS}-model pool (head (6, 1024), θ "
            f"{theta_length(TINYROUTER_N_MODELS):,} values); this pool has {n_models} models, so θ would "
            f"have {want:,} values and head ({n_models + HEAD_ROWS_EXTRA}, 1024): use a 3-model pool, or "
            f"--competition minirouter"
        )
    if competition == MINIROUTER and n_models not in MINIROUTER_POOL_SIZES:
        known = "; ".join(f"{theta_length(n):,} for {what}" for n, what in MINIROUTER_POOL_SIZES.items())
        return (
            f"MiniRouter's validator runs {known}; this pool has {n_models} models, so θ would have "
            f"{want:,} values, which it would not read"
        )
    return None
