"""`trinity.model.lbfgs`: torch's L-BFGS without `torch._dynamo` — the same steps bit for bit
as torch's LBFGS as shipped (which loads dynamo), in one fresh process: ours first, then the
cache it fills is emptied and torch's own runs."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys, torch
from trinity.model import lbfgs as ours

torch.manual_seed(0)
A = torch.randn(64, 9, dtype=torch.float64); b = torch.randn(64, dtype=torch.float64)
kw = dict(lr=1.0, max_iter=200, tolerance_grad=1e-9, tolerance_change=1e-12, history_size=20,
          line_search_fn="strong_wolfe")

def fit(make):
    p = torch.zeros(9, dtype=torch.float64, requires_grad=True)
    opt = make([p], **kw)
    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.softplus(A @ p - b).mean() + 1e-3 * (p * p).sum()
        loss.backward()
        return loss
    opt.step(closure)
    state = opt.state_dict()
    opt.load_state_dict(state)
    opt.step(closure)
    return p.detach().numpy().tobytes().hex(), state["state"][0]["n_iter"], "torch._dynamo" in sys.modules

mine = fit(ours.lbfgs)
for name in ours._WRAPPED:  # back to torch as shipped: its wrappers import dynamo again
    fn = getattr(torch.optim.Optimizer, name).__wrapped__
    if "__dynamo_disable" in vars(fn):
        delattr(fn, "__dynamo_disable")
theirs = fit(torch.optim.LBFGS)
print(*mine, *theirs)
"""


def test_same_steps_as_torch_without_loading_dynamo():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    theta, n_iter, dynamo, theta_t, n_iter_t, dynamo_t = out.stdout.split()
    assert dynamo == "False" and dynamo_t == "True"  # ours skips the import; torch's own does it
    assert (theta, n_iter) == (theta_t, n_iter_t) and int(n_iter) > 5  # same θ bytes, same iterations
