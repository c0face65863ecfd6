"""The built-in encoders' plain-torch Qwen3 against transformers' (the reference): same weights
from the same seed, the same hidden states bit for bit, the same token ids; and building the
practice encoder does not import transformers."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trinity.model.builtin import EOS_TOKEN, TOKENIZER_FILE, build_builtin, builtin_spec

ROOT = Path(__file__).resolve().parents[2]


def _reference(seed: int) -> torch.nn.Module:
    # here, not at the top: transformers costs each xdist worker ~2 s to import at collection,
    # and only this module's tests need it
    from transformers import Qwen3Config
    from transformers import Qwen3ForCausalLM as HFQwen3ForCausalLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return HFQwen3ForCausalLM(Qwen3Config(**builtin_spec("tiny-qwen3").to_dict())).eval()


@pytest.mark.parametrize("seed", [0, 7])
def test_weights_are_transformers_weights_for_the_same_seed(seed):
    ours, _ = build_builtin("tiny-qwen3", seed=seed)
    want, got = _reference(seed).state_dict(), ours.state_dict()
    assert list(got) == list(want)
    bad = [k for k in want if not torch.equal(want[k], got[k])]
    assert bad == []
    assert ours.lm_head.weight is ours.model.embed_tokens.weight  # tied, as the real model


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_hidden_states_equal_transformers_bit_for_bit(dtype):
    ours, _ = build_builtin("tiny-qwen3", seed=0)
    ours = ours.to(dtype=dtype).eval()
    ref = _reference(0).to(dtype=dtype)
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 8192, (3, 37), generator=gen)
    padded = torch.ones(3, 37, dtype=torch.long)
    padded[1, 30:], padded[2, 9:] = 0, 0  # right padding, as the router's prefix batches
    captured: dict[str, list[torch.Tensor]] = {"ours": [], "ref": []}
    with torch.inference_mode():
        for mask in (None, torch.ones(3, 37, dtype=torch.long), padded):
            got = ours.model(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
            want = ref.model(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
            assert got.dtype == dtype and torch.equal(got, want)
        # a forward pre-hook on a layer sees the same input (the router's prefix pass)
        for name, m in (("ours", ours), ("ref", ref)):
            hook = m.model.layers[2].register_forward_pre_hook(
                lambda mod, args, kwargs, name=name: captured[name].append(
                    args[0] if args else kwargs["hidden_states"]
                ),
                with_kwargs=True,
            )
            m.model(input_ids=ids, attention_mask=padded, use_cache=False)
            hook.remove()
    assert torch.equal(captured["ours"][0], captured["ref"][0])


def test_tokenizer_ids_equal_transformers():
    from transformers import PreTrainedTokenizerFast  # here: see _reference

    _, tok = build_builtin("tiny-qwen3")
    ref = PreTrainedTokenizerFast(tokenizer_object=tok.backend, eos_token=EOS_TOKEN, pad_token=EOS_TOKEN)
    texts = [
        "QUERY:\nWhat is 3*7?\n<Head Input>",
        "  leading spaces, tabs\tand\r\nCRLF ",
        "unicode: naïve café — 北京 🙂 ∑x²",
        f"an EOS inside the text {EOS_TOKEN} and after",
        "",
        "def f(x):\n    return x ** 2  # code\n" * 3,
    ]
    assert tok.eos_token_id == ref.eos_token_id == 8192 and tok.pad_token_id == ref.pad_token_id
    for t in texts:
        assert tok(t, add_special_tokens=False)["input_ids"] == ref(t, add_special_tokens=False)["input_ids"]
    assert tok(texts, add_special_tokens=False)["input_ids"] == ref(texts, add_special_tokens=False)["input_ids"]
    assert TOKENIZER_FILE.is_file()


def test_the_practice_encoder_does_not_import_transformers():
    code = (
        "import sys\n"
        "from trinity.model.encoder import load_encoder\n"
        "from trinity.model.router import Router\n"
        "from trinity.model.text import encoder_input\n"
        "r = Router(load_encoder('tiny-qwen3', device='cpu'), n_models=3)\n"
        "r.population_features(r.initial_mean()[None, :], [encoder_input('2+2?')])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'transformers'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120, capture_output=True, text=True
    )
    assert out.stdout.strip() == "[]"
