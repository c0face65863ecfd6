"""`trinity serve RUN_DIR`: a trained router behind an OpenAI-compatible HTTP endpoint.

One request to `/v1/chat/completions` with model `router` is one whole Thinker / Worker /
Verifier session on the run's pool, routed turn by turn by the run's head with the run's encoder
and competition text. Modules: `keys` (API keys stored as hashes, a budget each), `batcher`
(encoder work of concurrent sessions in one batch), `engine` (the pool stack and the session),
`app` (the Starlette application), `cli` (the commands). See docs/SERVE.md.
"""
