"""The role rows' warm start reads its synthesised transcripts as growing sessions (each token
once) and says how far it is; its features are those of encoding each text whole."""

from __future__ import annotations

import numpy as np

from trinity.benchmarks.practice import practice_questions
from trinity.competition.text import router_text
from trinity.optim.warmstart import frozen_features, role_features, role_transcripts

MODELS = ["simulated/mathlete", "simulated/scholar", "simulated/coder"]


def test_role_features_as_sessions_equal_whole_texts_and_report_progress():
    import torch

    from trinity.model.encoder import load_encoder
    from trinity.model.router import Router

    torch.set_num_threads(1)
    router = Router(load_encoder("tiny-qwen3", device="cpu"), len(MODELS))
    text = router_text("tinyrouter")
    qs = practice_questions()[:6]
    lines: list[str] = []
    X, y = role_features(router, text, qs, MODELS, lines.append)
    texts, y_ref = role_transcripts(text, qs, MODELS)
    whole = frozen_features(router, texts)
    assert np.array_equal(y, y_ref) and X.shape == whole.shape
    assert np.allclose(X, whole, atol=1e-4), float(np.abs(X - whole).max())
    assert len(lines) == 5 and lines[-1].startswith("warm start: role transcripts 5/5 encoded")
    # each token read once: far fewer than the five texts of each question hold together
    import re

    read, seen = (int(x) for x in re.search(r"(\d+) tokens read of (\d+)", lines[-1]).groups())
    assert 0 < read < 0.6 * seen
