"""Checkpoints of a training run: `checkpoint/manifest.json` + `checkpoint/state-<gen>.npz`.

The state is DATA ONLY: one `.npz` (numpy's zip of `.npy` arrays, read back with
`np.load(allow_pickle=False)`, so loading it cannot run code from its bytes) holding every array
of the state plus `state.json` (the rest: generation, history, best θ's metadata, RNG positions,
the fitness values the ES was told). The ES object itself is not stored: it is rebuilt by
replaying its generations (`trinity.optim.trainer`: a fresh ES from the run's seed, then `ask()`
and `tell()` with the recorded fitness values), which reproduces it bit for bit; the replayed
ES's RNG position must equal the recorded one, or the checkpoint is refused.

Tagged JSON values: `{"__t__": "nd", "i": k}` = array `a<k>` of the npz; `{"__t__": "rng",
"state": [...]}` = a `numpy.random.RandomState` (its `get_state()` tuple); `{"__t__": "tuple",
"v": [...]}`; `{"__t__": "float", "v": "inf"|"-inf"|"nan"}`.

The state goes to a new file named by generation; then the manifest — run id, config hash,
generation, file name, sha256, ledger head and record count — is replaced atomically. A crash at
any point leaves the previous manifest pointing at its own, still present, state file; older state
files are deleted only after the new manifest is durable.

`read_checkpoint` checks everything before anything is changed: manifest shape, the state
file's checksum, that run id and config hash are this run's (a copied-in checkpoint of another
run is "foreign"), and that the run's ledger still holds every record the checkpoint counted.
A checkpoint of the old pickle format (`trinity-checkpoint/1`) is refused, never unpickled.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from trinity.errors import CheckpointError
from trinity.io import atomic_write_bytes, atomic_write_json
from trinity.pool.ledger import verify_ledger
from trinity.runs.records import (  # the manifest's record
    CHECKPOINT_FORMAT,
    CHECKPOINT_MANIFEST,
    CheckpointManifest,
    RecordError,
    parse_manifest,
)
from trinity.runs.rundir import RunDir, utc_now_iso

FORMAT = CHECKPOINT_FORMAT
MANIFEST = CHECKPOINT_MANIFEST
OLD_PICKLE_FORMAT = "trinity-checkpoint/1"
STATE_JSON = "state.json"
TAG = "__t__"


def ledger_anchor(run: RunDir) -> tuple[str | None, int]:
    """(head hash, record count) of the run's ledger from its last whole record: what a checkpoint
    and summary.json record so that records cut from the end can be seen later."""
    if not run.ledger.exists():
        return None, 0
    data = run.ledger.read_bytes()
    for raw in reversed(data.split(b"\n")):
        if raw.strip():
            try:
                rec = json.loads(raw)
                return rec["h"], int(rec["seq"]) + 1
            except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError):
                continue  # a torn last line: the previous one is the head
    return None, 0


def ledger_head(run: RunDir) -> str | None:
    """The "h" of the ledger's last whole line, when the run has a ledger."""
    return ledger_anchor(run)[0]


# ---- data-only encoding ----------------------------------------------------------------------
def _encode(obj: Any, arrays: list[np.ndarray]) -> Any:
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        return v if math.isfinite(v) else {TAG: "float", "v": repr(v)}
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise TypeError("object arrays cannot go into a data-only checkpoint")
        arrays.append(np.ascontiguousarray(obj))
        return {TAG: "nd", "i": len(arrays) - 1}
    if isinstance(obj, np.random.RandomState):
        return {TAG: "rng", "state": _encode(list(obj.get_state()), arrays)}
    if isinstance(obj, tuple):
        return {TAG: "tuple", "v": [_encode(v, arrays) for v in obj]}
    if isinstance(obj, list):
        return [_encode(v, arrays) for v in obj]
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj) or TAG in obj:
            raise TypeError("checkpoint dicts need string keys (and no __t__ key)")
        return {k: _encode(v, arrays) for k, v in obj.items()}
    raise TypeError(f"{type(obj).__name__} cannot go into a data-only checkpoint")


def _decode(obj: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(obj, list):
        return [_decode(v, arrays) for v in obj]
    if not isinstance(obj, dict):
        return obj
    tag = obj.get(TAG)
    if tag is None:
        return {k: _decode(v, arrays) for k, v in obj.items()}
    if tag == "nd":
        return arrays[f"a{int(obj['i'])}"]
    if tag == "float":
        return float({"inf": "inf", "-inf": "-inf", "nan": "nan"}[obj["v"]])
    if tag == "tuple":
        return tuple(_decode(v, arrays) for v in obj["v"])
    if tag == "rng":
        rng = np.random.RandomState()
        name, keys, pos, has_gauss, cached = _decode(obj["state"], arrays)
        rng.set_state((str(name), np.asarray(keys, dtype=np.uint32), int(pos), int(has_gauss), float(cached)))
        return rng
    raise ValueError(f"unknown tag {tag!r}")


def encode_state(state: dict[str, Any]) -> bytes:
    arrays: list[np.ndarray] = []
    doc = _encode(state, arrays)
    buf = io.BytesIO()
    payload = {f"a{i}": a for i, a in enumerate(arrays)}
    payload["state_json"] = np.frombuffer(json.dumps(doc, allow_nan=False).encode("utf-8"), dtype=np.uint8)
    np.savez(buf, **payload)  # type: ignore[arg-type]  # (numpy's stub types **kwds as its allow_pickle flag)
    return buf.getvalue()


def _check_array_sizes(blob: bytes) -> None:
    """ValueError when an array's npy header claims more data than its member holds (np.savez
    stores arrays uncompressed): a crafted header of shape (10**12,) must not allocate."""
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        for info in zf.infolist():
            with zf.open(info) as f:
                version = np.lib.format.read_magic(f)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(f)
                else:
                    shape, _, dtype = np.lib.format.read_array_header_2_0(f)
            need = math.prod(shape) * dtype.itemsize
            if need > info.file_size:
                raise ValueError(f"array {info.filename} claims shape {shape} ({need} bytes) in {info.file_size} bytes")


def decode_state(blob: bytes) -> dict[str, Any]:
    """The state from an npz blob; never unpickles (ValueError/KeyError/… on anything else)."""
    _check_array_sizes(blob)
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        arrays = {name: z[name] for name in z.files}
    doc = json.loads(arrays.pop("state_json").tobytes().decode("utf-8"))
    state = _decode(doc, arrays)
    if not isinstance(state, dict):
        raise ValueError("the state is not a mapping")
    return state


def validate_state(state: dict[str, Any], *, n_params: int, popsize: int, where: str) -> None:
    """CheckpointError (one line) unless every field of a trainer state has its type, range and
    size: arrays bounded by the run's θ length, θ finite. Checked before anything is used."""
    hint = "start a new run (trinity train) or restore the run directory from a copy"

    def bad(field: str, why: str) -> CheckpointError:
        return CheckpointError(f"checkpoint {where}: field {field!r} {why}; {hint}")

    def count(field: str, v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**53:
            raise bad(field, f"must be a whole number >= 0, got {str(v)[:40]!r}")
        return v

    def vector(field: str, v: Any, n: int) -> None:
        if not isinstance(v, np.ndarray) or v.dtype.kind not in "fiu" or v.shape != (n,):
            shape = getattr(v, "shape", type(v).__name__)
            raise bad(field, f"must be a numeric array of shape ({n},), got {str(shape)[:40]}")
        if not np.all(np.isfinite(v)):
            raise bad(field, "holds non-finite values (NaN or infinity)")

    gen = count("gen", state.get("gen"))
    count("traces_bytes", state.get("traces_bytes", 0))
    count("evals", state.get("evals", 0))
    for f in ("batch_rng", "es_rng"):
        if f in state and not isinstance(state[f], np.random.RandomState):
            raise bad(f, f"must be a random-state record, got {type(state[f]).__name__}")
    if state.get("es_x0") is not None:
        vector("es_x0", state["es_x0"], n_params)
    tells = state.get("es_tells")
    if "es" not in state:
        if not isinstance(tells, list) or len(tells) != gen:
            raise bad("es_tells", f"must list {gen} generations' values")
        for i, t in enumerate(tells):
            vector(f"es_tells[{i}]", np.asarray(t) if isinstance(t, list) else t, popsize)
    hist = state.get("history")
    if not isinstance(hist, list) or len(hist) > gen or not all(isinstance(h, dict) for h in hist):
        raise bad("history", f"must be a list of at most {gen} generation records, got {str(hist)[:40]}")
    for i, h in enumerate(hist):
        g = h.get("gen")
        if isinstance(g, bool) or not isinstance(g, int) or not 1 <= g <= gen:
            raise bad(f"history[{i}].gen", f"must be a generation from 1 to {gen}, got {str(g)[:40]!r}")
    best = state.get("best")
    if best is not None:
        if not isinstance(best, dict):
            raise bad("best", f"must be a record, got {type(best).__name__}")
        vector("best.theta", best.get("theta"), n_params)
    if not isinstance(state.get("fitness"), dict):
        raise bad("fitness", "must be a record")
    ws = state.get("warm_start")
    if ws is not None and not isinstance(ws, dict):
        raise bad("warm_start", "must be a record")


# ---- files ------------------------------------------------------------------------------------
def write_checkpoint(run: RunDir, state: dict[str, Any], *, run_id: str, config_hash: str) -> CheckpointManifest:
    ckdir = run.checkpoint_dir
    ckdir.mkdir(parents=True, exist_ok=True)
    gen = int(state["gen"])
    blob = encode_state(state)
    name = f"state-{gen:06d}.npz"
    atomic_write_bytes(ckdir / name, blob)
    head, n_records = ledger_anchor(run)
    manifest = CheckpointManifest(
        format=FORMAT,
        run_id=run_id,
        config_hash=config_hash,
        generation=gen,
        file=name,
        sha256=hashlib.sha256(blob).hexdigest(),
        bytes=len(blob),
        ledger_head=head,
        ledger_records=n_records,
        time=utc_now_iso(),
    )
    atomic_write_json(ckdir / MANIFEST, manifest.to_json())
    for old in [*ckdir.glob("state-*.npz"), *ckdir.glob("state-*.pkl")]:
        if old.name != name:
            old.unlink(missing_ok=True)
    return manifest


def has_checkpoint(run: RunDir) -> bool:
    return (run.checkpoint_dir / MANIFEST).exists()


def check_ledger_against(run: RunDir, head: object, n_records: object, what: str) -> None:
    """CheckpointError when the run's ledger no longer holds the `n_records` records ending at
    `head` that `what` (a checkpoint, summary.json) recorded: deleted, emptied or cut at the end."""
    if not isinstance(head, str):
        return
    n_records = n_records if isinstance(n_records, int) and not isinstance(n_records, bool) else "its"

    fix = (
        "restore ledger.jsonl from a copy of the run directory, or start a new run; resuming would "
        "restart the spend (and the budget) from a ledger that lost paid calls"
    )
    if not run.ledger.exists() or run.ledger.stat().st_size == 0:
        state = "missing" if not run.ledger.exists() else "empty"
        raise CheckpointError(f"{run.ledger} is {state} but {what} records {n_records} paid calls; {fix}")
    rep = verify_ledger(run.ledger, expected_head=head)
    if not rep.ok or (isinstance(n_records, int) and rep.n_records < n_records):
        raise CheckpointError(
            f"{run.ledger} does not hold the {n_records} records {what} counts ({rep.problem}); {fix}"
        )


def read_checkpoint(run: RunDir, *, run_id: str, config_hash: str) -> tuple[CheckpointManifest, dict[str, Any]]:
    """(manifest, state) after every check; CheckpointError naming the problem otherwise."""
    ckdir = run.checkpoint_dir
    mpath = ckdir / MANIFEST
    hint = "start a new run (trinity train) or restore the run directory from a copy"
    try:
        data = json.loads(mpath.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{run.path}: no checkpoint ({mpath} missing)") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise CheckpointError(f"checkpoint {mpath} is corrupt (not JSON); {hint}") from None
    except IsADirectoryError:
        raise CheckpointError(f"checkpoint {mpath} is a directory, not a manifest; {hint}") from None
    if isinstance(data, dict) and data.get("format") == OLD_PICKLE_FORMAT:
        raise CheckpointError(
            f"checkpoint {mpath} is in the old pickle format ({OLD_PICKLE_FORMAT}), which is "
            "never loaded because a pickle can run code; start a new run (trinity train)"
        )
    try:
        manifest = parse_manifest(data, str(mpath))
    except RecordError:
        raise CheckpointError(f"checkpoint {mpath} is not a {FORMAT} manifest; {hint}") from None
    if manifest.run_id != run_id:
        raise CheckpointError(
            f"checkpoint in {ckdir} belongs to run {manifest.run_id!r}, not {run_id!r} (foreign checkpoint); {hint}"
        )
    if manifest.config_hash != config_hash:
        raise CheckpointError(
            f"checkpoint in {ckdir} was written with another config (hash "
            f"{manifest.config_hash} != {config_hash}); {hint}"
        )
    spath = ckdir / Path(manifest.file).name
    try:
        blob = spath.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        raise CheckpointError(f"checkpoint state {spath} is missing; {hint}") from None
    if hashlib.sha256(blob).hexdigest() != manifest.sha256:
        raise CheckpointError(f"checkpoint state {spath} is corrupt (checksum mismatch); {hint}")
    try:
        state = decode_state(blob)
    except (
        ValueError,
        KeyError,
        TypeError,
        IndexError,
        OSError,
        EOFError,
        zipfile.BadZipFile,
        UnicodeDecodeError,
        MemoryError,
        RecursionError,
        OverflowError,
    ) as e:
        raise CheckpointError(
            f"checkpoint state {spath} is not a data-only {FORMAT} state ({type(e).__name__}: {str(e)[:120]}); {hint}"
        ) from None
    if state.get("gen") != manifest.generation:
        raise CheckpointError(f"checkpoint state {spath} does not match its manifest; {hint}")
    check_ledger_against(run, manifest.ledger_head, manifest.ledger_records, f"checkpoint {mpath}")
    return manifest, state
