"""The SVF factors are computed once per weight: a router built again on the same encoder weights
reuses them; other weights get their own."""

import torch

from trinity.model.svf import SvfLayer, svd_factors


def test_same_weights_share_factors_other_weights_do_not(tiny_encoder):
    from trinity.model.encoder import load_encoder

    a = SvfLayer(tiny_encoder.decoder, 0)
    again = load_encoder("tiny-qwen3", device="cpu", dtype="float32", seed=0)  # a fresh copy, same bytes
    b = SvfLayer(again.decoder, 0)
    for fa, fb in zip(a.factors, b.factors):
        assert fa.module is not fb.module and fa.U is fb.U and fa.s is fb.s and fa.Vh is fb.Vh
    w = a.factors[0].module.weight.detach().clone()
    w[0, 0] += 1.0
    U, s, Vh = svd_factors(w)
    assert s is not a.factors[0].s
    torch.testing.assert_close((U * s) @ Vh, w, atol=1e-4, rtol=1e-4)  # the factors of the changed weight
    f = a.factors[1]
    torch.testing.assert_close((f.U * f.s) @ f.Vh, f.module.weight, atol=1e-4, rtol=1e-4)
