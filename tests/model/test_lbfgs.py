"""`trinity.model.lbfgs`: torch's L-BFGS without `torch._dynamo` — the same steps bit for bit,
checked against a process that uses torch's LBFGS as shipped (and so loads dynamo)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys, torch
torch.manual_seed(0)
A = torch.randn(64, 9, dtype=torch.float64); b = torch.randn(64, dtype=torch.float64)
p = torch.zeros(9, dtype=torch.float64, requires_grad=True)
kw = dict(lr=1.0, max_iter=200, tolerance_grad=1e-9, tolerance_change=1e-12, history_size=20,
          line_search_fn="strong_wolfe")
if sys.argv[1] == "ours":
    from trinity.model.lbfgs import lbfgs
    opt = lbfgs([p], **kw)
else:
    opt = torch.optim.LBFGS([p], **kw)
def closure():
    opt.zero_grad()
    loss = torch.nn.functional.softplus(A @ p - b).mean() + 1e-3 * (p * p).sum()
    loss.backward()
    return loss
opt.step(closure)
state = opt.state_dict()
opt.load_state_dict(state)
opt.step(closure)
print(p.detach().numpy().tobytes().hex(), state["state"][0]["n_iter"], "torch._dynamo" in sys.modules)
"""


def _run(which: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", SCRIPT, which], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


def test_same_steps_as_torch_without_loading_dynamo():
    theirs, ours = _run("torch"), _run("ours")
    assert theirs[2] == "True"  # torch as shipped loads it: what this module avoids
    assert ours[2] == "False"
    assert ours[:2] == theirs[:2] and int(ours[1]) > 5  # same θ bytes, same iteration count
