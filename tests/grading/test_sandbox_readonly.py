"""Without bubblewrap, as root: every mount is read-only to candidate code except its work dir
and the fresh tmp dirs, so a world-writable (0777) directory elsewhere takes no file — and
`trinity doctor`'s layer list says whether that layer holds."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from trinity.grading.sandbox import Limits, describe_layers, run_in_sandbox

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="the plain sandbox's mount layers need root"
)


def _probe_dir() -> str:
    for base in ("/srv", "/opt", str(ROOT)):
        if os.access(base, os.W_OK):
            d = tempfile.mkdtemp(prefix="trinity-ro-probe-", dir=base)
            os.chmod(d, 0o777)
            return d
    pytest.skip("no writable directory outside /tmp for the probe")


def test_a_world_writable_dir_outside_the_tmp_dirs_takes_no_file():
    d = _probe_dir()
    try:
        target = os.path.join(d, "left-behind")
        code = (
            "import os\n"
            "try:\n"
            f"    with open({target!r}, 'w') as f: f.write('x')\n"
            "    print('wrote')\n"
            "except OSError as e:\n"
            "    print('refused', e.errno)\n"
            "with open('mine', 'w') as f: f.write('x')\n"  # the work dir stays writable
            "print(open('mine').read())\n"
        )
        outs: list[bytes] = []
        run = run_in_sandbox(
            {"mode": "stdin", "code": code, "inputs": [""], "fn_name": None},
            Limits(per_test_timeout=20, problem_timeout=40),
            lambda k, status, err, payload: outs.append(payload) or True,
            use_bwrap=False,
        )
        assert run.outcome == "completed", run
        if not run.layers.get("readonly"):
            off = [note for name, on, note in describe_layers() if name == "read-only mounts" and not on]
            assert off, "the layer is off but trinity doctor does not say so"
            pytest.skip(off[0])
        assert outs and outs[0].decode().split() == ["refused", "30", "x"], outs  # 30: EROFS
        assert not os.path.exists(target)
        layers = {name: on for name, on, _ in describe_layers()}
        # where bubblewrap is installed, grading uses it (its own read-only view) and doctor names
        # that layer; without it, doctor names the plain sandbox's read-only mounts
        assert layers.get("bubblewrap") is True or layers.get("read-only mounts") is True, layers
    finally:
        shutil.rmtree(d, ignore_errors=True)
