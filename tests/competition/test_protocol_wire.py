"""A live `--competition tinyrouter` / `minirouter` run against a loopback server that keeps every
request body: each body is what the competition's own session code sends for the same choices
(its role contracts, transcript blocks and decoding, in its key order), and nothing else is sent.

The expected bodies are written out here from the competition's formats (the system messages are
the ones their `build_messages` produced, read from the golden fixture), not by the code under test.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest
from train_argv import train_argv

from trinity.io import read_jsonl
from trinity.practice.server import start_practice_server

FIX = Path(__file__).parents[1] / "fixtures" / "protocol"


def _their_system(comp: str) -> dict[str, str]:
    g = json.loads((FIX / f"{comp}_golden.json").read_text(encoding="utf-8"))
    out = {}
    for sess in g["sessions"]:
        for call, (_agent, role) in zip(sess["calls"], sess["plan"]):
            out[role] = call["messages"][0]["content"]
    return out


def _their_body(comp: str, system: dict[str, str], model: str, query: str, turns: list[dict], role: str) -> dict:
    if turns:
        blocks = []
        for k, t in enumerate(turns, start=1):
            body = t["output"].strip()
            if t["role"] == "Verifier" and t["verdict"] is not None:
                body += f"\n[parsed verdict: {t['verdict']}]"
            agent = t["model"].rsplit("/", 1)[-1] if comp == "tinyrouter" else t["model"]
            blocks.append(f"--- Turn {k} | agent={agent} | role={t['role'].upper()} ---\n{body}")
        transcript = "\n\n".join(blocks)
    else:
        transcript = "(no prior turns yet)"
    messages = [
        {"role": "system", "content": system[role]},
        {"role": "user", "content": f"QUERY:\n{query}\n\nTRANSCRIPT SO FAR:\n{transcript}"},
    ]
    body = {"model": model, "messages": messages, "temperature": 0.0, "top_p": 1.0, "max_tokens": 4096}
    if comp == "tinyrouter":
        body["reasoning_effort"] = "minimal"  # their OpenRouter client's top-level key
    # MiniRouter on Chutes: reasoning_param is null, so no reasoning key at all
    return body


@pytest.mark.slow
@pytest.mark.parametrize("comp", ["tinyrouter", "minirouter"])
def test_live_run_sends_what_their_sessions_send(tmp_path, capsys, monkeypatch, comp):
    from trinity.benchmarks.practice import practice_questions
    from trinity.cli import main
    from trinity.competition.text import router_text

    h = start_practice_server(port=0)
    h.server.recent = collections.deque(maxlen=10_000)
    monkeypatch.setenv("TRINITY_POOL_BASE_URL", h.base_url)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    run = tmp_path / "run"
    try:
        rc = main(
            train_argv(
                run, "--pool", "practice", "--warm-start", "none", "--competition", comp, "--objective", "reward",
                "--json", mode="live", questions="practice", generations=1, popsize=4, m=3, seed=3,
            )
        )  # fmt: skip
        out = capsys.readouterr()
        assert rc == 0, out.out + out.err
        bodies = [json.dumps(b, ensure_ascii=False) for b in h.server.recent]
    finally:
        h.stop()
    meta = json.loads((run / "run.json").read_text())
    assert meta["protocol"] == comp
    by_id = {q.id: q for q in practice_questions()}
    system = _their_system(comp)
    expected = []
    for tr in read_jsonl(run / "traces.jsonl"):
        query = router_text(comp).render_question(by_id[tr["qid"]])
        for k, t in enumerate(tr["turns"]):
            expected.append(
                json.dumps(_their_body(comp, system, t["model"], query, tr["turns"][:k], t["role"]), ensure_ascii=False)
            )
    assert len(expected) >= 12
    # every body sent is one their code would send, and every one it would send was sent (a
    # repeat of the very same request may come from the response cache instead)
    assert set(bodies) == set(expected) and len(bodies) <= len(expected)
    roles = {t["role"] for tr in read_jsonl(run / "traces.jsonl") for t in tr["turns"]}
    assert len(roles) >= 2
