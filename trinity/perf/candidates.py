"""`trinity bench candidates`: per-generation candidate evaluation, fast path vs naive reference.

One process, one encoder (default `qwen3-0.6b-random`: the real Qwen3-0.6B shapes, random
weights, no download), `--popsize` candidates around the initial mean (σ 0.1) on `--questions`
synthetic questions of about `--tokens` tokens. Measures:
- the first generation (pays layers 0..L-1 once per text, fills the cache) and warm generations;
- the naive path (rebuild weights, full forward, one candidate at a time) on `--ref-candidates`;
- a plain large `torch.matmul` (2048³) in the same dtype on the same device, run back to back
  in windows before and after every warm generation, as the FLOP/s yardstick (the median
  window's sustained rate, and the best single matmul).
It also reports how far the fast features are from the reference ones on the timed candidates.
"""

from __future__ import annotations

import json
import time

from trinity.errors import ConfigError
from trinity.model.text import encoder_input

WORDS = (
    "find the value of integer sum prime number triangle angle degrees probability that a "
    "random chosen point lies inside circle radius compute remainder when divided by how many "
    "ways can we arrange letters word solve equation for real x positive"
).split()


def register(sub) -> None:
    p = sub.add_parser("candidates", help="fast batched candidate evaluation vs the naive reference path")
    p.add_argument("--encoder", default="qwen3-0.6b-random", help="encoder name or path (default: %(default)s)")
    p.add_argument("--popsize", type=int, default=32)
    p.add_argument("--questions", type=int, default=16)
    p.add_argument("--tokens", type=int, default=120, help="mean tokens per question text (±15%%)")
    p.add_argument("--ref-candidates", type=int, default=2, help="candidates timed on the slow reference path")
    p.add_argument("--warm-generations", type=int, default=2, help="timed generations after the first")
    p.add_argument("--max-batch-tokens", type=int, default=None, help="router knob (default: the router's)")
    p.add_argument("--device", default=None, help="cpu | cuda (default: cuda if present)")
    p.add_argument("--dtype", default=None, help="float32 | bfloat16 (default: bf16 on GPU, fp32 on CPU)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def synthetic_texts(encoder, n: int, mean_tokens: int, seed: int) -> list[str]:
    """`n` encoder inputs whose token counts (with EOS) spread ±15% around `mean_tokens`."""
    import numpy as np  # lazy: kept off the CLI start (adds numpy here)

    rng = np.random.RandomState(seed)
    texts = []
    for i in range(n):
        target = int(round(mean_tokens * (0.85 + 0.3 * (i / max(1, n - 1)))))
        words: list[str] = []
        text = encoder_input("")
        while len(encoder.token_ids(text)) < target:
            words.append(str(rng.choice(WORDS)))
            text = encoder_input(" ".join(words) + "?")
        texts.append(text)
    return texts


def _sync(device) -> None:
    import torch  # lazy: kept off the CLI start (adds torch here)

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_window(device, dtype, seconds: float, n: int = 2048) -> tuple[float, float]:
    """Plain `n × n @ n × n` matmuls back to back for about `seconds` (the yardstick) →
    (sustained FLOP/s over the window, best single-matmul FLOP/s), after one warm-up."""
    import torch  # lazy: kept off the CLI start (adds torch here)

    gen = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=gen).to(device, dtype)
    b = torch.randn(n, n, generator=gen).to(device, dtype)
    torch.matmul(a, b)
    _sync(device)
    best, count, start = 0.0, 0, time.perf_counter()
    while True:
        t0 = time.perf_counter()
        torch.matmul(a, b)
        _sync(device)
        now = time.perf_counter()
        best, count = max(best, 2 * n**3 / (now - t0)), count + 1
        if now - start >= seconds and count >= 3:
            return 2 * n**3 * count / (now - start), best


def measure(args) -> dict:
    import numpy as np  # lazy: kept off the CLI start (adds numpy here)
    import torch  # lazy: kept off the CLI start (adds torch here)

    from trinity.model.encoder import load_encoder  # lazy: kept off the CLI start (adds torch + transformers here)

    # lazy: kept off the CLI start (adds torch + transformers here)
    from trinity.model.router import DEFAULT_MAX_BATCH_TOKENS, Router

    for name in ("popsize", "questions", "tokens", "ref_candidates", "warm_generations"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= 1")
    t0 = time.perf_counter()
    enc = load_encoder(args.encoder, device=args.device, dtype=args.dtype, seed=args.seed)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    router = Router(enc, n_models=3, max_batch_tokens=args.max_batch_tokens or DEFAULT_MAX_BATCH_TOKENS)
    svd_s = time.perf_counter() - t0
    texts = synthetic_texts(enc, args.questions, args.tokens, args.seed)
    n_tokens = [len(enc.token_ids(t)) for t in texts]
    rng = np.random.RandomState(args.seed)
    thetas = router.initial_mean() + 0.1 * rng.randn(args.popsize, router.n_params)

    # First generation: layers 0..L-1 once per text (cache fill) + the population.
    t0 = time.perf_counter()
    router.population_features(thetas, texts)
    cold_s = time.perf_counter() - t0
    # Warm generations, reference candidates and the matmul yardstick (sustained windows) take
    # turns, so all three see the same machine: a shared machine's load changes by the minute.
    window_s = min(10.0, max(1.0, cold_s / 2))
    n_ref = min(args.ref_candidates, args.popsize)
    mm = [matmul_window(enc.device, enc.dtype, window_s)]
    warm, ref_times, diffs = [], [], []
    for i in range(max(args.warm_generations, n_ref)):
        if i < args.warm_generations:
            t0 = time.perf_counter()
            fast = router.population_features(thetas, texts)
            warm.append(time.perf_counter() - t0)
            mm.append(matmul_window(enc.device, enc.dtype, window_s))
        if i < n_ref:
            t0 = time.perf_counter()
            ref = router.reference_features(thetas[i], texts)
            ref_times.append(time.perf_counter() - t0)
            diffs.append(float(np.abs(ref - fast[i]).max()))
    warm_s = float(np.median(warm))
    flops = router.last_flops  # of the last warm generation (all warm ones do the same work)
    fast_per_candidate = warm_s / args.popsize

    ref_per_candidate = float(np.median(ref_times))

    mm_median, mm_best = float(np.median([m[0] for m in mm])), float(max(m[1] for m in mm))
    fast_flops_s = flops / warm_s
    return {
        "bench": "candidates",
        "encoder": args.encoder,
        "device": str(enc.device),
        "dtype": str(enc.dtype).replace("torch.", ""),
        "torch_threads": torch.get_num_threads(),
        "popsize": args.popsize,
        "questions": args.questions,
        "tokens_mean": float(np.mean(n_tokens)),
        "tokens_min": int(min(n_tokens)),
        "tokens_max": int(max(n_tokens)),
        "n_params": router.n_params,
        "max_batch_tokens": router.max_batch_tokens,
        "load_s": load_s,
        "svd_s": svd_s,
        "first_generation_s": cold_s,
        "warm_generation_s": warm_s,
        "warm_generations_s": warm,
        "reference_candidate_s": ref_times,
        "fast_per_candidate_s": fast_per_candidate,
        "reference_candidates": n_ref,
        "reference_per_candidate_s": ref_per_candidate,
        "ratio": ref_per_candidate / fast_per_candidate,
        "fast_gflop": flops / 1e9,
        "fast_gflops_per_s": fast_flops_s / 1e9,
        "matmul_window_s": window_s,
        "matmul_gflops_per_s": mm_median / 1e9,
        "matmul_best_gflops_per_s": mm_best / 1e9,
        "fast_fraction_of_matmul": fast_flops_s / mm_median,
        "fast_fraction_of_best_matmul": fast_flops_s / mm_best,
        "max_abs_feature_diff": max(diffs),
    }


def run(args) -> int:
    result = measure(args)
    if args.json:
        print(json.dumps(result))
        return 0
    r = result
    print(
        f"encoder {r['encoder']} on {r['device']} ({r['dtype']}, {r['torch_threads']} threads), {r['n_params']} params"
    )
    print(
        f"population {r['popsize']} × {r['questions']} questions of {r['tokens_mean']:.0f} tokens "
        f"({r['tokens_min']}–{r['tokens_max']}), max batch tokens {r['max_batch_tokens']}"
    )
    print(f"first generation (fills the layer cache): {r['first_generation_s']:.2f} s")
    print(
        f"warm generation: {r['warm_generation_s']:.2f} s  → fast path {r['fast_per_candidate_s'] * 1e3:.1f} ms/candidate"
    )
    print(
        f"reference path ({r['reference_candidates']} candidates): {r['reference_per_candidate_s'] * 1e3:.1f} ms/candidate"
    )
    print(f"ratio reference / fast: {r['ratio']:.1f}x")
    print(
        f"fast path {r['fast_gflops_per_s']:.1f} GFLOP/s = {r['fast_fraction_of_matmul']:.2f} of a plain "
        f"2048³ matmul sustained over {r['matmul_window_s']:.0f} s windows ({r['matmul_gflops_per_s']:.1f} GFLOP/s, "
        f"median); {r['fast_fraction_of_best_matmul']:.2f} of its best single run "
        f"({r['matmul_best_gflops_per_s']:.1f})"
    )
    print(f"max |fast - reference| feature difference: {r['max_abs_feature_diff']:.2e}")
    return 0
