"""How often the router decides differently on the competitions' text than on the text it read
before issue 11, and whether our path agrees with a reference coordinator (should be 100%), on
qwen3-0.6b-random (Qwen3-0.6B shapes, random weights, no download), CPU fp32.

    OMP_NUM_THREADS=2 python scripts/bench_competition_text.py [--out FILE]   # figures: docs/perf/competition-text.md

Questions: the practice set's math / code items, the MATH-500 and LiveCodeBench fixture rows, and
MMLU items (the MMLU fixture rows + the practice multiple-choice items in MMLU's schema: stem,
choices). Earlier turns: a deterministic script of Thinker / Worker outputs. A decision is the
(model, role) argmax pair; θ: SVF scales 1 + 0.1·N(0,1) (P draws) × K random heads each (rows
N(0,1), the logit scale is irrelevant to the argmax).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "competition"))

from reference_coordinator import ReferenceCoordinator

from trinity.benchmarks import get_benchmark
from trinity.benchmarks.practice import practice_questions
from trinity.competition.text import (
    HEAD_INPUT_MARKER,
    MINIROUTER,
    TINYROUTER,
    router_text,
)
from trinity.data.questions import Question
from trinity.model.encoder import load_encoder
from trinity.model.router import Router

POOLS = {
    TINYROUTER: ("qwen/qwen3.5-35b-a3b", "google/gemini-3.1-flash-lite", "deepseek/deepseek-v4-flash"),
    MINIROUTER: ("deepseek-ai/DeepSeek-V3.2-TEE", "zai-org/GLM-5-TEE", "moonshotai/Kimi-K2.5-TEE"),
}
THINK = (
    "Let me restate the problem and plan. First identify what is asked, then check the edge cases; "
    "a common pitfall is an off-by-one in the bounds. Plan: compute step by step, verify at the end.\n"
)
WORK = (
    "Working through it: we set up the quantities, simplify, and check the result against the "
    "conditions. Therefore the final answer is \\boxed{{{a}}}.\n"
)


def old_text(question: str, turns) -> str:
    """The encoder input before issue 11 (trinity.model.text at 65e5101), written out."""
    parts = [f"QUERY:\n{question}"]
    for k, (role, model, output) in enumerate(turns, start=1):
        parts.append(f"\n[Turn {k} | {role} | {model}]\n{output}")
    return "".join(parts) + HEAD_INPUT_MARKER


def questions() -> tuple[list[Question], list[Question]]:
    fx = ROOT / "tests" / "fixtures" / "benchmarks"
    prac = practice_questions()
    other = [q for q in prac if q.kind in ("math", "code")]
    other += get_benchmark("math500").load(str(fx / "math500_test.jsonl"))
    other += get_benchmark("livecodebench").load(str(fx / "livecodebench" / "test.jsonl"), train_before="2030-01-01")
    mmlu = get_benchmark("mmlu").load(str(fx / "mmlu_test.jsonl"))
    for q in prac:
        if q.kind == "mc" and q.extra.get("choices"):
            mmlu.append(
                Question(
                    f"mmlu-{q.id}",
                    "mmlu",
                    q.question.split("\n")[0],
                    q.answer,
                    "mc",
                    {"choices": list(q.extra["choices"])},
                )
            )
    return other, mmlu


def sample(qs: list[Question], n: int | None) -> list[Question]:
    """`n` of `qs` spread over the list (every kind and source keeps its share), all when None."""
    if n is None or n >= len(qs):
        return qs
    return [qs[int(i)] for i in np.linspace(0, len(qs) - 1, n)]


def script_turns(qs: list[Question], models, n: int):
    rng = np.random.RandomState(1)
    out = []
    for i, _q in enumerate(qs):
        t = [
            ("Thinker", models[rng.randint(3)], "  " + THINK),
            ("Worker", models[rng.randint(3)], WORK.format(a=i) + "\n"),
        ]
        out.append(t[:n])
    return out


class Decider:
    """Features of growing transcripts (one stream per question and SVF draw, turn after turn:
    the incremental session encoder, so a turn reads only its new tokens) → (model, role)
    argmax of K heads."""

    def __init__(self, router: Router, thetas: np.ndarray, heads: np.ndarray):
        self.router, self.P, self.heads = router, thetas.shape[0], heads
        self.se = router.session_encoder(thetas)

    def __call__(self, texts: list[str]) -> np.ndarray:
        """(P, K, N, 2) for the next turn of the N streams."""
        N = len(texts)
        cand = np.repeat(np.arange(self.P), N)
        feats = self.se.features(texts * self.P, cand, list(range(N * self.P))).astype(np.float64)
        lg = np.einsum("pnh,kch->pknc", feats.reshape(self.P, N, -1), self.heads)
        n = self.router.n_models
        return np.stack([lg[..., :n].argmax(-1), lg[..., n:].argmax(-1)], axis=-1)


def agree(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(np.all(a == b, axis=-1)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--encoder", default="qwen3-0.6b-random")
    ap.add_argument("--svf-draws", type=int, default=4)
    ap.add_argument("--questions", type=int, default=None, help="at most this many questions (and MMLU items)")
    ap.add_argument("--heads", type=int, default=250)
    ap.add_argument("--ref-texts", type=int, default=24, help="texts per competition for the reference check")
    args = ap.parse_args()
    t0 = time.time()
    enc = load_encoder(args.encoder, device="cpu", dtype="float32")
    router = Router(enc, 3)
    rng = np.random.RandomState(0)
    P, K = args.svf_draws, args.heads
    thetas = np.tile(router.initial_mean(), (P, 1))
    thetas[:, router.n_outputs * router.hidden :] += 0.1 * rng.randn(P, router.svf_size)
    heads = rng.randn(K, router.n_outputs, router.hidden)
    other, mmlu = questions()
    other, mmlu = sample(other, args.questions), sample(mmlu, args.questions)
    res = {
        "encoder": f"{args.encoder} (cpu, fp32)",
        "questions": len(other),
        "mmlu_items": len(mmlu),
        "svf_draws": P,
        "heads": K,
        "agreement_old_vs_new": {},
        "reference_agreement": {},
    }
    for comp in (TINYROUTER, MINIROUTER):
        rt, models = router_text(comp), POOLS[comp]
        rows = {}
        d_old, d_new = Decider(router, thetas, heads), Decider(router, thetas, heads)
        for turn in (1, 2, 3):
            tr = script_turns(other, models, turn - 1)
            old = [old_text(q.question, t) for q, t in zip(other, tr)]
            new = [rt.question_input(q, t) for q, t in zip(other, tr)]
            rows[f"turn {turn}"] = agree(d_old(old), d_new(new))
            print(comp, f"turn {turn}", rows[f"turn {turn}"], f"{time.time() - t0:.0f}s", flush=True)
        old = [old_text(q.question, ()) for q in mmlu]
        new = [rt.question_input(q) for q in mmlu]
        rows["MMLU items, turn 1"] = agree(Decider(router, thetas, heads)(old), Decider(router, thetas, heads)(new))
        print(comp, "mmlu", rows["MMLU items, turn 1"], flush=True)
        res["agreement_old_vs_new"][comp] = rows

        # our path (the incremental session encoder the live loop uses, turn by turn) vs the reference
        ref = ReferenceCoordinator(enc.model, enc.tokenizer, 3, HEAD_INPUT_MARKER if comp == TINYROUTER else "")
        qs = (other + mmlu)[: args.ref_texts]
        theta = thetas[:1].copy()
        theta[0, : router.n_outputs * router.hidden] = heads[0].ravel()
        se = router.session_encoder(theta)
        n_same = n_all = 0
        for turn in (1, 2, 3):
            tr = script_turns(qs, models, turn - 1)
            ours = se.logits(
                [rt.question_input(q, t) for q, t in zip(qs, tr)], np.zeros(len(qs), int), list(range(len(qs)))
            )
            ref.configure(theta[0], router.hidden)
            try:
                for i, (q, t) in enumerate(zip(qs, tr)):
                    history = [(r.lower(), rt.model_name(m), o.strip()) for r, m, o in t]
                    m, r = ref.decide(ref.transcript(rt.render_question(q), history))
                    n_same += (int(ours[i, :3].argmax()), int(ours[i, 3:].argmax())) == (
                        m,
                        ("thinker", "worker", "verifier").index(r),
                    )
                    n_all += 1
            finally:
                ref.restore()
        res["reference_agreement"][comp] = {"decisions": n_all, "equal": n_same}
        print(comp, "reference", n_same, "/", n_all, f"{time.time() - t0:.0f}s", flush=True)
    res["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(res, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
