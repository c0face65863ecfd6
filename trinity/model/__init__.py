"""trinity.model — the router: frozen encoder, SVF on one layer, linear head (docs/CONTRACTS.md, Router model).

Modules (import them directly; this package stays light so CLI modules may import it):
- `encoder`  — `load_encoder(name_or_path, device, dtype, seed) -> Encoder` (HF or built-in)
- `builtin`  — the no-download encoders `tiny-qwen3` and `qwen3-0.6b-random` (+ their tokenizer)
- `qwen3`    — Qwen3 in plain torch for the built-ins (transformers' weights and arithmetic, not its import)
- `text`     — `encoder_input(question, turns)`: the text the encoder reads
- `svf`      — SVD of the SVF layer's 7 matrices; the naive reference path
- `fastpath` — batched population evaluation (factored SVF, last layer at position -2 only)
- `router`   — `Router`: θ → logits, fast and reference paths, the layer-input cache
- `theta`    — θ layout, `best_theta.npy` and the bundle's `head_weights.npy` + `svf_scales.npy`
- `policy`   — argmax / softmax / sampling per group (model, role)
- `arrays`   — the numpy array types (`Float64Array` θ, `Float32Array` features/logits, `IndexArray` …)
- `hftypes`  — names for the transformers objects held (`HFCausalLM`, `HFDecoder`, `HFLayer`)
- `lbfgs`    — torch's L-BFGS made without loading `torch._dynamo` (the warm start's and M1's fits)
"""

ROLES = ("Thinker", "Worker", "Verifier")

__all__ = ["ROLES"]
