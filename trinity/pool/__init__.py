"""trinity.pool — every call to a model pool, and what it cost (docs/CONTRACTS.md, Pool and sessions).

| module              | what                                                                   |
|---------------------|------------------------------------------------------------------------|
| `providers`         | `load_pool(name) -> PoolConfig` from configs/models.yaml; `pool_model_ids` |
| `keys`              | API keys from the environment or a private env file; `redact`          |
| `client`            | `PoolClient` (async, OpenAI-compatible), `ChatResult`, `PoolStats`     |
| `faults`            | retry policy, Retry-After, the pool-wide cool-down                     |
| `budget`            | `Budget`: worst-case reservation before a call, settle to actual       |
| `ledger`            | hash-chained `ledger.jsonl`: `Ledger`, `verify_ledger`                 |
| `cache`             | `ResponseCache` (SQLite WAL)                                           |
| `journal`           | `CallJournal`: completed paid calls by key, so a resume never pays twice |
| `appender`          | the fsync'd group-commit writer under the ledger and the journal       |
| `cli`               | `trinity pool list`, `trinity ledger verify|report`                    |

Importing this package imports nothing heavy; httpx loads with `client`.
"""
