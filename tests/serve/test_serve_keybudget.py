"""A key's budget in the server: reserved call by call, waiting for its own calls in flight."""

import asyncio

import pytest


def test_a_key_call_waits_for_the_keys_calls_in_flight_and_fails_only_when_the_cap_is_spent():
    """Two calls whose worst cases do not fit the key's cap together: the second waits for the
    first to settle (its bill is far below its worst case) instead of failing; a call whose worst
    case no longer fits what is left fails with the key's name."""
    from types import SimpleNamespace

    from trinity.pool.budget import Budget
    from trinity.serve.engine import KeyBudgetExceeded, KeyedClient

    class Pool:
        decoding: dict = {}

    class Inner:
        pool = Pool()

        def __init__(self):
            self.gates = [asyncio.Event(), asyncio.Event()]
            self.calls = 0

        def _worst_case_usd(self, model, messages, params):
            return float(messages[0]["worst"])

        async def chat(self, model, messages, **kw):
            k = self.calls
            self.calls += 1
            if k < 2:
                await self.gates[k].wait()
            return SimpleNamespace(cost_usd=0.001)

    async def go():
        inner = Inner()
        kc = KeyedClient(inner, Budget(0.010), "alice")
        first = asyncio.ensure_future(kc.chat("m", [{"worst": 0.006}], purpose="serve"))
        await asyncio.sleep(0)
        second = asyncio.ensure_future(kc.chat("m", [{"worst": 0.006}], purpose="serve"))
        for _ in range(5):
            await asyncio.sleep(0)
        assert inner.calls == 1 and not second.done()  # waiting, not failed
        inner.gates[0].set()
        await first
        for _ in range(5):
            await asyncio.sleep(0)
        assert inner.calls == 2
        inner.gates[1].set()
        await second
        assert kc.budget.spent_usd == 0.002
        with pytest.raises(KeyBudgetExceeded, match="key 'alice'"):
            await kc.chat("m", [{"worst": 0.009}], purpose="serve")

    asyncio.run(go())
