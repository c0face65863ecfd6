"""θ's layout and file names: the one definition (model, runs, submission and competition import it).

θ = `[head (n_models + N_ROLES, hidden) C-order | svf]`, float64 in `best_theta.npy`; the
TinyRouter bundle splits it into `head_weights.npy` + `svf_scales.npy` (float32). The SVF part has
one scale vector per matrix of the SVF layer (`SVF_MATRICES`, in θ order), each `hidden` long
for the competitions' encoder: `(n_models + 3) * 1024 + 7 * 1024` values.

This module sits at the bottom of the layers (it imports nothing), below every package that
reads or writes θ.
"""

from __future__ import annotations

N_ROLES = 3  # the head's role rows: Thinker, Worker, Verifier
# the SVF layer's matrices in θ order: attention q, k, v, o, then MLP gate, up, down
SVF_MATRICES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
N_SVF_MATRICES = len(SVF_MATRICES)
COMPETITION_HIDDEN = 1024  # the competitions' encoder width (Qwen3-0.6B)
COMPETITION_SVF_PARAMS = N_SVF_MATRICES * COMPETITION_HIDDEN  # 7168

THETA_FILE = "best_theta.npy"
HEAD_FILE = "head_weights.npy"
SVF_FILE = "svf_scales.npy"
RECEIPT_FILE = "receipt.json"
