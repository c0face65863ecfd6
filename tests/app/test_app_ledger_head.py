"""The Ledger mode gives the verdict of `trinity ledger verify RUN_DIR` (issue 12): a ledger cut
at the end or deleted is BROKEN against the head the run recorded in summary.json."""

from __future__ import annotations

import json

from rich.text import Text
from textual.widgets import Static

from minertui.app import MinerApp
from minertui.synth import make_run
from trinity.io import read_jsonl


async def _head(root) -> str:
    app = MinerApp(runs_root=root, poll=False, start_mode="ledger")
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(2):
            await app.refresh_now()
            await pilot.pause()
        await app.workers.wait_for_complete()
        for _ in range(2):
            await app.refresh_now()
            await pilot.pause()
        c = app.screen.query_one("#ledger-head", Static).content
        return c.plain if isinstance(c, Text) else str(c)


async def test_ledger_mode_checks_the_recorded_head(tmp_path):
    root = tmp_path / "runs"
    run = make_run(root / "run-ledger", generations=6, calls_per_gen=5).path
    led = run / "ledger.jsonl"
    recs = read_jsonl(led)
    (run / "summary.json").write_text(json.dumps({"ledger_head": recs[-1]["h"], "ledger_records": len(recs)}))
    assert "chain OK" in await _head(root)
    lines = led.read_bytes().splitlines(keepends=True)
    led.write_bytes(b"".join(lines[:-3]))  # the last 3 records deleted: the chain itself is intact
    head = await _head(root)
    assert "chain BROKEN" in head and "summary.json" in head, head
    led.unlink()
    head = await _head(root)
    assert "chain BROKEN" in head and "missing" in head, head


async def test_ledger_mode_shows_what_was_billed_above_the_reserved_worst_case(tmp_path):
    from trinity.io import canonical_json
    from trinity.pool.ledger import GENESIS, record_hash

    root = tmp_path / "runs"
    run = make_run(root / "run-excess", generations=3, calls_per_gen=4).path
    led = run / "ledger.jsonl"
    prev, lines = GENESIS, []
    for i, rec in enumerate(read_jsonl(led)):  # re-chain it with two records billed above the worst case
        rec.pop("h")
        rec["prev_h"] = prev
        if i in (2, 5):
            rec["excess_micro_usd"] = 1250
        rec["h"] = prev = record_hash(rec)
        lines.append(canonical_json(rec) + "\n")
    led.write_text("".join(lines))
    head = await _head(root)
    assert "chain OK" in head and "$0.002500 billed above the reserved worst case on 2 calls" in head, head
