"""Write the small tinyrouter-m1 fixtures (tests/fixtures/benchmarks/tinyrouter_m1/) in the
dataset's schema `id | domain | difficulty | prompt`, deterministically from a seed.

The prompts are written from per-domain topic words and per-difficulty phrasings, so a feature
that reads the words can separate the domains; 10% of the difficulty labels are moved one step
so difficulty is not a lookup. Each file stays well under 60 KB.

    PYTHONPATH=. python scripts/make_m1_fixtures.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from trinity.competition.m1 import DOMAINS_5, DOMAINS_20

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "benchmarks" / "tinyrouter_m1"

TOPICS_5 = {
    "math": ["integral", "prime factor", "quadratic equation", "triangle area", "probability of dice", "matrix rank"],
    "code": ["Python function", "SQL query", "recursive algorithm", "linked list", "unit test", "regex pattern"],
    "knowledge": ["French Revolution", "capital of Peru", "photosynthesis", "Roman emperor", "Nobel prize", "atom"],
    "commonsense": ["umbrella in rain", "cold coffee", "lost keys", "late bus", "wet towel", "empty fridge"],
    "instruction": ["formal email", "bullet list", "haiku", "summary in three lines", "polite reply", "JSON output"],
}
TOPICS_20 = {d: [d, f"{d} basics", f"{d} tools", f"modern {d}"] for d in DOMAINS_20}
FRAMES = ["about the {t}", "on {t}", "regarding {t}", "involving {t}"]
LEVELS = {
    1: ["Quick question", "Simple one"],
    2: ["Easy question", "Briefly answer"],
    3: ["Explain", "Describe clearly"],
    4: ["Analyse in depth", "Work through carefully"],
    5: ["Prove rigorously, olympiad level,", "Expert-level derivation"],
}


def rows(domains, topics, n: int, split: str, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        dom = domains[i % len(domains)]
        level = rng.randint(1, 5)
        text = f"{rng.choice(LEVELS[level])} {rng.choice(FRAMES).format(t=rng.choice(topics[dom]))}."
        label = level
        if rng.random() < 0.10:  # label noise: one step
            label = min(5, max(1, level + rng.choice((-1, 1))))
        out.append({"id": f"fixture:{split}:{i}", "domain": dom, "difficulty": label, "prompt": text})
    rng.shuffle(out)
    return out


def main() -> None:
    for config, domains, topics, sizes in (
        ("5-domain", DOMAINS_5, TOPICS_5, {"train": 300, "test": 120}),
        ("20-domain", DOMAINS_20, TOPICS_20, {"train": 300, "test": 120}),
    ):
        d = OUT / config
        d.mkdir(parents=True, exist_ok=True)
        for k, (split, n) in enumerate(sizes.items()):
            path = d / f"{split}.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in rows(domains, topics, n, split, 7 + k)))
            print(path, path.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
