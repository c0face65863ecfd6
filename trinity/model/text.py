"""The text the encoder reads for one turn of a session (DESIGN §3, TinyRouter format)."""

from __future__ import annotations

from collections.abc import Iterable

HEAD_INPUT_MARKER = "\n<Head Input>"


def encoder_input(question: str, turns: Iterable[tuple[str, str, str]] = ()) -> str:
    """`"QUERY:\\n{question}"`, then per earlier turn `"\\n[Turn {k} | {role} | {model}]\\n{output}"`
    (k counts from 1), then `"\\n<Head Input>"`. `turns` holds `(role, model, output)` tuples.

    The EOS token is not part of the string: tokenisation appends it (`Encoder.token_ids`).
    """
    parts = [f"QUERY:\n{question}"]
    for k, (role, model, output) in enumerate(turns, start=1):
        parts.append(f"\n[Turn {k} | {role} | {model}]\n{output}")
    parts.append(HEAD_INPUT_MARKER)
    return "".join(parts)
