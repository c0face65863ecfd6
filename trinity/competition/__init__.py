"""trinity.competition — what each competition (TinyRouter, MiniRouter) expects, as data.

- `profiles` — `Profile`, `PROFILES`, `get_profile(name)`, `run_competition(meta, override)`,
               `competition_for_pool(pool)`; `theta_length`, the model names and the router text live in `text`
- `pr`       — the PR title and body each competition's bots read
- `notice`   — the rewards notice (who pays for what), from data the user can refresh

This package sits at the bottom of the layers (it imports only `trinity.errors`): the encoder,
the sessions, submission and analysis all read it.
"""
