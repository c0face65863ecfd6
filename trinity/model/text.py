"""The text the encoder reads for one turn of a session: the competition's format,
which `trinity.competition.text` holds (TinyRouter by default)."""

from __future__ import annotations

from collections.abc import Iterable

from trinity.competition.text import HEAD_INPUT_MARKER, router_text

__all__ = ["HEAD_INPUT_MARKER", "encoder_input"]


def encoder_input(question: str, turns: Iterable[tuple[str, str, str]] = (), competition: str | None = None) -> str:
    """`competition`'s encoder input for the query text `question` after the earlier `turns`
    (`(role, model id, output)` tuples, oldest first). TinyRouter:
    `"QUERY:\\n{question}"`, then per turn `"\\n\\n[Turn {k} | {role} | {name}]\\n{output}"`, then
    `"\\n<Head Input>"`; MiniRouter: the same without the marker.

    The EOS token is not part of the string: tokenisation appends it (`Encoder.token_ids`).
    """
    return router_text(competition).encoder_input(question, turns)
