"""The Hugging Face Hub: is this machine told to stay offline, and can it reach the Hub?

Below everything that loads from the Hub (the encoder, the benchmark sources) and `trinity doctor`.
"""

from __future__ import annotations

import os

OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
PROBE_TIMEOUT_S = 5.0


def offline_vars_set() -> list[str]:
    """The offline switches set in the environment (empty: online mode)."""
    return [v for v in OFFLINE_VARS if os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")]


def hub_reachable(timeout_s: float = PROBE_TIMEOUT_S) -> tuple[bool, str]:
    """One quick request to the Hub, so an offline machine fails in seconds, not minutes."""
    import httpx  # lazy: httpx loaded only when used
    from huggingface_hub import constants  # lazy: huggingface_hub loaded only when used

    url = constants.ENDPOINT.rstrip("/") + "/api/datasets?limit=1"
    try:
        httpx.get(url, timeout=timeout_s, follow_redirects=True)
    except httpx.HTTPError as e:
        return False, f"{type(e).__name__}"
    return True, ""
