"""trinity.optim — the sep-CMA-ES trainer (docs/CONTRACTS.md, Trainer) and everything around it.

- `trainer`    — `Trainer`: the generation loop, validation, best-θ rule, run-dir outputs
- `fitness`    — the `Fitness` protocol and `CachedFitness` (turn-1 choice → recorded correctness)
- `checkpoint` — atomic checkpoints with a checksum; foreign/corrupt detection
- `runinputs`  — `load_run_inputs(run_dir | TrainConfig)`: questions, matrix, splits, cross-checked
- `routing`    — `load_trained(run_dir).route(questions, turns)` for eval, score and the app
- `engine`     — `start_run` / `resume_run`: inputs → encoder → run dir → trainer
- `cli`        — `trinity train`, `trinity resume` (no heavy imports at module level)
"""
