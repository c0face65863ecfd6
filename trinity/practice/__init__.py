"""trinity.practice — the practice simulator: SIMULATED models over the shipped practice questions,
served over real HTTP so that everything above the pool runs offline, with no key and no money.

| module       | what                                                                            |
|--------------|---------------------------------------------------------------------------------|
| `simulation` | the practice setup (`configs/practice.yaml`): model profiles, `simulate_correct`, `practice_matrix` |
| `replies`    | what the simulated models say (`PracticeResponder`)                             |
| `server`     | the simulated pool over OpenAI-compatible HTTP; `start_practice_server`         |

It sits above the pool and the graders (it answers through them) and below the session and
everything that runs against it; the pool itself knows nothing of it.
"""
