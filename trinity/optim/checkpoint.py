"""Checkpoints of a training run: `checkpoint/manifest.json` + `checkpoint/state-<gen>.pkl`.

The state (a pickle: ES object with its RNG, the minibatch RNG, fitness state, history, best θ,
generation, trace offset) goes to a new file named by generation; then the manifest — run id,
config hash, generation, file name, sha256, ledger head — is replaced atomically. A crash at any
point leaves the previous manifest pointing at its own, still present, state file; older state
files are deleted only after the new manifest is durable.

`read_checkpoint` checks everything before anything is changed: manifest shape, the state
file's checksum, and that run id and config hash are this run's (a copied-in checkpoint of
another run is "foreign").
"""

from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path
from typing import Any

from trinity.errors import CheckpointError
from trinity.io import atomic_write_bytes, atomic_write_json
from trinity.runs.rundir import RunDir, utc_now_iso

FORMAT = "trinity-checkpoint/1"
MANIFEST = "manifest.json"


def ledger_head(run: RunDir) -> str | None:
    """The "h" of the ledger's last whole line, when the run has a ledger."""
    if not run.ledger.exists():
        return None
    data = run.ledger.read_bytes()
    for raw in reversed(data.split(b"\n")):
        if raw.strip():
            try:
                return json.loads(raw).get("h")
            except (json.JSONDecodeError, AttributeError, UnicodeDecodeError):
                continue  # a torn last line: the previous one is the head
    return None


def write_checkpoint(run: RunDir, state: dict[str, Any], *, run_id: str, config_hash: str) -> dict:
    ckdir = run.checkpoint_dir
    ckdir.mkdir(parents=True, exist_ok=True)
    gen = int(state["gen"])
    blob = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    name = f"state-{gen:06d}.pkl"
    atomic_write_bytes(ckdir / name, blob)
    manifest = {
        "format": FORMAT, "run_id": run_id, "config_hash": config_hash, "generation": gen,
        "file": name, "sha256": hashlib.sha256(blob).hexdigest(), "bytes": len(blob),
        "ledger_head": ledger_head(run), "time": utc_now_iso(),
    }
    atomic_write_json(ckdir / MANIFEST, manifest)
    for old in ckdir.glob("state-*.pkl"):
        if old.name != name:
            old.unlink(missing_ok=True)
    return manifest


def has_checkpoint(run: RunDir) -> bool:
    return (run.checkpoint_dir / MANIFEST).exists()


def read_checkpoint(run: RunDir, *, run_id: str, config_hash: str) -> tuple[dict, dict[str, Any]]:
    """(manifest, state) after every check; CheckpointError naming the problem otherwise."""
    ckdir = run.checkpoint_dir
    mpath = ckdir / MANIFEST
    hint = "start a new run (trinity train) or restore the run directory from a copy"
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{run.path}: no checkpoint ({mpath} missing)") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise CheckpointError(f"checkpoint {mpath} is corrupt (not JSON); {hint}") from None
    keys = ("format", "run_id", "config_hash", "generation", "file", "sha256")
    if not isinstance(manifest, dict) or any(k not in manifest for k in keys) or manifest["format"] != FORMAT:
        raise CheckpointError(f"checkpoint {mpath} is not a {FORMAT} manifest; {hint}")
    if manifest["run_id"] != run_id:
        raise CheckpointError(f"checkpoint in {ckdir} belongs to run {manifest['run_id']!r}, not "
                              f"{run_id!r} (foreign checkpoint); {hint}")
    if manifest["config_hash"] != config_hash:
        raise CheckpointError(f"checkpoint in {ckdir} was written with another config (hash "
                              f"{manifest['config_hash']} != {config_hash}); {hint}")
    spath = ckdir / Path(str(manifest["file"])).name
    try:
        blob = spath.read_bytes()
    except FileNotFoundError:
        raise CheckpointError(f"checkpoint state {spath} is missing; {hint}") from None
    if hashlib.sha256(blob).hexdigest() != manifest["sha256"]:
        raise CheckpointError(f"checkpoint state {spath} is corrupt (checksum mismatch); {hint}")
    try:
        state = pickle.loads(blob)
    except Exception as e:  # a pickle that passed its checksum yet fails: version skew
        raise CheckpointError(f"checkpoint state {spath} cannot be loaded ({type(e).__name__}: {e}); "
                              "was it written by another version of trinity/cma?") from None
    if not isinstance(state, dict) or state.get("gen") != manifest["generation"]:
        raise CheckpointError(f"checkpoint state {spath} does not match its manifest; {hint}")
    return manifest, state
