"""trinity.m1 — TinyRouter Milestone 1 (prompt triage) from this workstation.

- `features` — the frozen encoder's features of the prompts, computed once and cached
- `fit`      — the supervised head: full-batch softmax regression with L2 (LBFGS), early stopping
- `run`      — `trinity m1 train|resume`: an ordinary run directory
- `evaluate` — scores with intervals, baselines on the same features, the king rule
- `cli`      — `trinity m1 train|resume|eval|score|pack|check|submit`

The competition itself (domains, text, pack, gates, score, margin) is `trinity.competition.m1`.
"""
