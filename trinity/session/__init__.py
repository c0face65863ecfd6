"""trinity.session — the multi-turn Thinker/Worker/Verifier loop, live fitness, `collect`
(docs/CONTRACTS.md, Pool and sessions)."""
