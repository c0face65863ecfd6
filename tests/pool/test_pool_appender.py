"""The group-commit appender under the ledger and the journal: every line lands, in submit order,
and every waiter — threads and coroutines — hears when its line is on disk (or why not)."""

import asyncio
import threading

import pytest

from trinity.errors import RunLockedError
from trinity.pool.appender import GroupCommitAppender


def test_coroutines_and_threads_all_land_in_order(tmp_path):
    path = tmp_path / "a.jsonl"
    app = GroupCommitAppender(path)

    async def main():
        async def one(i):
            await app.write_async(f'{{"i": {i}}}\n'.encode())

        await asyncio.gather(*(one(i) for i in range(500)))

    asyncio.run(main())
    threads = [threading.Thread(target=app.write, args=(f'{{"t": {k}}}\n'.encode(),)) for k in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    app.close()
    lines = path.read_text().splitlines()
    assert lines[:500] == [f'{{"i": {i}}}' for i in range(500)]
    assert sorted(lines[500:]) == sorted(f'{{"t": {k}}}' for k in range(20))
    # Group commit: far fewer fsync passes than lines.
    assert app.batches < 520


def test_a_cancelled_waiter_does_not_lose_its_line_or_break_others(tmp_path):
    path = tmp_path / "a.jsonl"
    app = GroupCommitAppender(path)

    async def main():
        first = app.submit_async(b"first\n")  # queued, then its waiter goes away
        first.cancel()
        await app.write_async(b"second\n")
        assert first.cancelled()

    asyncio.run(main())
    app.close()
    assert path.read_text() == "first\nsecond\n"


def test_write_error_reaches_async_waiters(tmp_path):
    app = GroupCommitAppender(tmp_path / "a.jsonl")
    app.write(b"ok\n")
    import os

    os.close(app._fd)  # the descriptor is gone: the next write fails
    app._fd = os.open(tmp_path / "ro", os.O_RDONLY | os.O_CREAT)

    async def main():
        with pytest.raises(OSError):
            await app.write_async(b"lost\n")

    asyncio.run(main())
    with pytest.raises(RuntimeError, match="closed"):
        app.close()
        app.submit(b"x\n")


def test_second_writer_is_refused(tmp_path):
    app = GroupCommitAppender(tmp_path / "a.jsonl", what="ledger")
    with pytest.raises(RunLockedError, match="ledger .* is being written by another process"):
        GroupCommitAppender(tmp_path / "a.jsonl", what="ledger")
    app.close()
