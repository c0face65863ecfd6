"""trinity.practice — the practice simulator: SIMULATED models over the shipped practice questions,
served over real HTTP so that everything above the pool runs offline, with no key and no money.

| module       | what                                                                            |
|--------------|---------------------------------------------------------------------------------|
| `simulation` | the practice setup (`configs/practice.yaml`): model profiles, `simulate_correct`, `practice_matrix` |
| `replies`    | what the simulated models say (`PracticeResponder`)                             |
| `server`     | the simulated pool over OpenAI-compatible HTTP; `start_practice_server`         |
| `cli`        | `trinity pool serve-practice` (added to the pool's command group by trinity.cli) |

It sits above the pool and the graders (it answers through them) and below the session and
everything that runs against it; the pool itself knows nothing of it. Importing this package
registers the practice pool's models and prices with the pool (`models_from: practice` in
configs/models.yaml, `trinity.pool.providers.register_model_source`).
"""

from __future__ import annotations

from trinity.pool.providers import Price, register_model_source
from trinity.practice.simulation import practice_models


def pool_models() -> tuple[tuple[str, ...], dict[str, Price]]:
    """The practice pool's models (`models_from: practice` in configs/models.yaml): the simulated
    models of the practice setup, in pool order, and their simulated prices."""
    profiles = practice_models()
    return tuple(profiles), {m: Price(p.price_in, p.price_out) for m, p in profiles.items()}


register_model_source("practice", pool_models)
