"""Build `trinity/model/tiny_tokenizer.json`, the BPE tokenizer of the built-in encoders.

The built-in encoders (`tiny-qwen3`, `qwen3-0.6b-random`) cannot download Qwen's tokenizer, so
they ship one trained here, once, with the `tokenizers` library: byte-level BPE with Qwen2's
pre-tokenizer split (digits one by one, words with their leading space), 8,192 tokens + EOS
`<|endoftext|>`. The corpus is the practice questions, every docstring of the Python standard
library (English prose) and its first ~6 MB of source in path order (code): text like what the
router reads. On the practice transcripts it gives ~2.9 characters a token (Qwen's 151k-token
vocabulary gives ~4 on English); the byte-level tokenizer it replaced gave 1.

The output file is committed; the encoders load it, they never train. Re-run only to change it:

    python scripts/build_tiny_tokenizer.py [--out PATH] [--vocab 8192] [--code-mb 6]
"""

from __future__ import annotations

import argparse
import ast
import json
import sysconfig
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

ROOT = Path(__file__).resolve().parents[1]
EOS_TOKEN = "<|endoftext|>"
# Qwen2's split pattern (tokenizer.json of Qwen/Qwen3-0.6B, pre_tokenizer.Split).
QWEN_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def _stdlib_sources() -> list[tuple[str, ast.Module]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for path in sorted(stdlib.rglob("*.py")):
        if any(p in path.parts for p in ("site-packages", "test", "tests", "idlelib", "lib2to3")):
            continue
        try:
            text = path.read_text(encoding="utf-8")
            out.append((text, ast.parse(text)))
        except (UnicodeDecodeError, OSError, SyntaxError, ValueError):
            continue
    return out


def corpus(max_code_bytes: int) -> list[str]:
    """Practice questions, then stdlib docstrings, then stdlib sources up to `max_code_bytes`."""
    texts = [
        json.loads(line)["question"]
        for line in (ROOT / "trinity" / "data" / "practice_questions.jsonl").read_text().splitlines()
        if line.strip()
    ]
    sources = _stdlib_sources()
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for _, tree in sources:
        texts += [d for node in ast.walk(tree) if isinstance(node, kinds) and (d := ast.get_docstring(node))]
    used = 0
    for text, _ in sources:
        if used >= max_code_bytes:
            break
        texts.append(text)
        used += len(text)
    return texts


def build(vocab: int, code_mb: float) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train_from_iterator(corpus(int(code_mb * 1e6)), trainer=trainer)
    tok.add_special_tokens([EOS_TOKEN])
    return tok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "trinity" / "model" / "tiny_tokenizer.json")
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--code-mb", type=float, default=6.0)
    args = ap.parse_args()
    tok = build(args.vocab, args.code_mb)
    tok.save(str(args.out), pretty=False)
    print(f"wrote {args.out}: {tok.get_vocab_size()} tokens, EOS id {tok.token_to_id(EOS_TOKEN)}")


if __name__ == "__main__":
    main()
