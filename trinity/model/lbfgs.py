"""torch's L-BFGS, made without loading `torch._dynamo`.

`torch.optim.Optimizer` marks `add_param_group`, `zero_grad`, `state_dict` and `load_state_dict`
"do not compile" with `torch._disable_dynamo`, whose wrapper imports `torch._dynamo` (and sympy)
on the first call: about 1.5 s of CPU, paid by every `train` (the label warm start) and `trinity m1
train` process although nothing here is ever compiled. The wrapper looks up the disabled version
of the function it wraps in the attribute `__dynamo_disable` before importing anything; outside
`torch.compile` the disabled version behaves as the function itself, so filling that attribute
with the function keeps every step bit for bit (`tests/model/test_lbfgs.py`) and skips the import.
Where torch's wrappers change shape (another torch), nothing is filled and torch does what it did.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

# The Optimizer methods wrapped by torch._disable_dynamo (torch/_compile.py: `inner`, which
# closes over `fn` and caches `fn.__dynamo_disable`).
_WRAPPED = ("add_param_group", "zero_grad", "state_dict", "load_state_dict")


def _skip_dynamo_import() -> None:
    for name in _WRAPPED:
        inner = getattr(torch.optim.Optimizer, name, None)
        fn = getattr(inner, "__wrapped__", None)
        code = getattr(inner, "__code__", None)
        if fn is None or code is None or code.co_name != "inner" or "fn" not in code.co_freevars:
            continue  # not torch's _disable_dynamo wrapper: leave it alone
        if getattr(fn, "__dynamo_disable", None) is None:
            setattr(fn, "__dynamo_disable", fn)


def lbfgs(params: Iterable[torch.Tensor], **kw: Any) -> torch.optim.LBFGS:
    """`torch.optim.LBFGS(params, **kw)`; see the module doc for what differs (only start-up)."""
    _skip_dynamo_import()
    return torch.optim.LBFGS(params, **kw)
