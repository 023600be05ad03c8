r"""Checkpoints of a (distributed) training run that resume bit-identically.

Layout of a checkpoint folder (one folder per run; each save adds a snapshot and moves the
``latest.json`` pointer, the commit point)::

    latest.json                       format version, epoch, world size, partition fingerprint,
                                      config, the model's tensor signature, SHA-256 per file
    epoch-000012-<token>/rank{r}.pt   rank r: model and optimizer state, RNG states, epoch,
                                      the step state of the model's compressors and their
                                      error-feedback residuals (rank r's, as tensors)

Every rank writes its own file (temporary name, fsync, rename); once all have written, rank 0
replaces ``latest.json`` atomically and prunes older snapshots. A run killed at any moment
leaves ``latest.json`` pointing at a complete snapshot. Rank files hold only tensors and plain
containers and are read with ``torch.load(weights_only=True)`` after their checksum is checked:
nothing is unpickled that could run code. The folder must be visible to every rank (a shared
file system, or one host). A rank-local table (:func:`pyg_sar.shard_embedding`) is saved as
each rank's own rows in its rank file; shard the fresh model's table before loading.
"""
from __future__ import annotations

import hashlib
import io
import json
import random
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

from pyg_sar.compression.interface import compressors_of
from pyg_sar.files import atomic_write
from pyg_sar.reshard import ReshardError, rank_local_ids, reshard

FORMAT_VERSION = 1
LATEST = "latest.json"


class CheckpointError(ValueError):
    """A checkpoint is missing, damaged, or does not fit the model, partition or job."""


@dataclass
class Checkpoint:
    """What :func:`load_checkpoint` restored.

    Attributes:
        epoch: the epoch the snapshot was taken after (resume at ``epoch + 1``).
        config: the ``config`` given to :func:`save_checkpoint` (JSON).
        extra: the ``extra`` given to :func:`save_checkpoint` (JSON), e.g. loop state.
        path: the snapshot's folder.
        fingerprint: the partition fingerprint it was written for (``None`` if none).
        world_size: the number of ranks that wrote it (another than this job's: resumed on
            another world size, see :func:`load_checkpoint`).
    """

    epoch: int
    path: Path
    config: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    fingerprint: Optional[str] = None
    world_size: Optional[int] = None


def _context(ctx):
    from pyg_sar.distributed.context import resolve_context
    return resolve_context(ctx)


def _signature(model: torch.nn.Module) -> dict[str, list]:
    """``name -> [shape, dtype]`` of every tensor of the model's state dict. A rank-local
    parameter (a sharded embedding table, :func:`pyg_sar.shard_embedding`: each rank file
    holds that rank's rows) has as many rows as the rank has nodes: its row count is written
    as ``-1``."""
    from pyg_sar.nn.embedding import rank_local_names
    local = rank_local_names(model)
    return {k: [[-1, *v.shape[1:]] if k in local else list(v.shape),
                str(v.dtype).replace("torch.", "")]
            for k, v in model.state_dict().items()}


def _rng_state() -> dict:
    np_state = np.random.get_state()
    py_state = random.getstate()
    state = {
        "torch": torch.get_rng_state(),
        "numpy": {"keys": torch.from_numpy(np_state[1].astype(np.int64)), "pos": int(np_state[2]),
                  "has_gauss": int(np_state[3]), "cached_gaussian": float(np_state[4])},
        "python": {"version": py_state[0], "state": list(py_state[1]), "gauss": py_state[2]},
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    keys = state["numpy"]["keys"].numpy().astype(np.uint32)
    np.random.set_state(("MT19937", keys, state["numpy"]["pos"], state["numpy"]["has_gauss"],
                         state["numpy"]["cached_gaussian"]))
    py = state["python"]
    random.setstate((py["version"], tuple(py["state"]), py["gauss"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _write_atomic(path: Path, data: bytes) -> None:
    atomic_write(path, data, durable=True)


def _fingerprint(partition: Any) -> Optional[str]:
    if partition is None:
        return None
    fp = getattr(partition, "fingerprint", None)
    if not isinstance(fp, str):
        raise ValueError(f"partition must be a LocalPartition (with a fingerprint) or None "
                         f"(got {type(partition).__name__})")
    return fp


def _graph_summary(partition: Any) -> Optional[dict]:
    """Node and edge counts of the whole graph a partition was cut from (from its
    ``meta.json``): what a checkpoint resumed on another partition of it must match."""
    meta = getattr(partition, "meta", None)
    if not isinstance(meta, dict) or "num_nodes" not in meta:
        return None
    return {"num_nodes": meta.get("num_nodes"), "num_edges": meta.get("num_edges")}


def draw_counters(model: torch.nn.Module) -> dict[str, dict]:
    """The counters of the model's keyed draws, by submodule name: the auto-encoders' negatives
    and noise (``_sar_draws``, :mod:`pyg_sar.nn.autoencoder`) and DGI's corruption epoch
    (:class:`pyg_sar.nn.infomax.NodePermutation`). The same on every rank; a resumed run draws
    what the uninterrupted one would have."""
    from pyg_sar.nn.autoencoder import DRAWS
    from pyg_sar.nn.infomax import NodePermutation
    out: dict[str, dict] = {}
    for name, module in model.named_modules():
        entry: dict = {}
        draws = module.__dict__.get(DRAWS)
        if draws:
            entry["draws"] = {str(k): int(v) for k, v in draws.items()}
        corruption = module.__dict__.get("corruption")
        if isinstance(corruption, NodePermutation):
            entry["corruption_epoch"] = int(corruption.epoch)
        if entry:
            out[name] = entry
    return out


def restore_draw_counters(model: torch.nn.Module, saved: dict) -> None:
    """Set the counters :func:`draw_counters` saved (a submodule missing now is skipped: the
    model check before refuses another architecture)."""
    from pyg_sar.nn.autoencoder import DRAWS
    from pyg_sar.nn.infomax import NodePermutation
    modules = dict(model.named_modules())
    for name, entry in (saved or {}).items():
        module = modules.get(name)
        if module is None:
            continue
        if "draws" in entry:
            module.__dict__[DRAWS] = {k: int(v) for k, v in entry["draws"].items()}
        corruption = module.__dict__.get("corruption")
        if "corruption_epoch" in entry and isinstance(corruption, NodePermutation):
            corruption.epoch = int(entry["corruption_epoch"])


def save_checkpoint(path: str | Path, model: torch.nn.Module,
                    optimizer: Optional[torch.optim.Optimizer] = None, epoch: int = 0, *,
                    config: Optional[dict] = None, partition: Any = None,
                    extra: Optional[dict] = None, keep: int = 2, ctx=None) -> Path:
    """Save this rank's training state; collective: every rank must call it, and every rank
    returns once the checkpoint is complete (``latest.json`` names it), so any rank may load it
    straight away.

    Args:
        path: the run's checkpoint folder (created if needed).
        model: the (converted) model; its ``state_dict`` is saved.
        optimizer: its ``state_dict`` is saved (optional).
        epoch: the number of epochs completed.
        config: JSON-serialisable run configuration, returned by :func:`load_checkpoint`.
        partition: the rank's :class:`~pyg_sar.partition.LocalPartition`; its fingerprint is
            recorded so a checkpoint is never resumed on another partition.
        extra: JSON-serialisable loop state (e.g. best validation accuracy so far).
        keep: snapshots kept (the newest ``keep``; at least 1).
        ctx: the :class:`~pyg_sar.distributed.DistContext` (default: the current one).

    Returns:
        The snapshot folder.
    """
    if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 0:
        raise ValueError(f"save_checkpoint: epoch must be an integer >= 0 (got {epoch!r})")
    if not isinstance(keep, int) or keep < 1:
        raise ValueError(f"save_checkpoint: keep must be an integer >= 1 (got {keep!r})")
    try:
        config_json = json.dumps(config or {}, sort_keys=True, default=str)
        extra_json = json.dumps(extra or {}, sort_keys=True)
    except (TypeError, ValueError) as e:
        raise ValueError(f"save_checkpoint: config and extra must be JSON-serialisable ({e})"
                         ) from None
    ctx = _context(ctx)
    fingerprint = _fingerprint(partition)
    root = Path(path)
    # Agree on the epoch and a fresh snapshot name (never overwrite a committed snapshot).
    token = uuid.uuid4().hex[:8] if ctx.rank == 0 else None
    agreed = ctx.comm.allgather_object([epoch, token])
    epochs = sorted({e for e, _ in agreed})
    if len(epochs) > 1:
        raise RuntimeError(f"save_checkpoint: ranks disagree on the epoch "
                           f"({[e for e, _ in agreed]})")
    snapshot = root / f"epoch-{epoch:06d}-{agreed[0][1]}"
    snapshot.mkdir(parents=True, exist_ok=True)

    payload = {
        "format_version": FORMAT_VERSION, "epoch": epoch, "rank": ctx.rank,
        "world_size": ctx.world_size, "fingerprint": fingerprint,
        "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "rng": _rng_state(), "config_json": config_json, "extra_json": extra_json,
        # the compressors' schedule clocks and this rank's error-feedback residuals
        # (pyg_sar.compression; CPU tensors), by the first layer using each
        "compression": {name: comp.state_dict() for name, comp in compressors_of(model).items()},
        # original node ids of the rows of every rank-local table: a job of another size
        # re-shards them (pyg_sar.reshard)
        "rank_local_ids": rank_local_ids(model),
        # the keyed draws' counters (auto-encoders' negatives and noise, DGI's corruption)
        "draws": draw_counters(model),
    }
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    data = buffer.getvalue()
    _write_atomic(snapshot / f"rank{ctx.rank}.pt", data)
    digests = ctx.comm.allgather_object(hashlib.sha256(data).hexdigest())  # all written

    failure = None
    if ctx.rank == 0:
        latest = {
            "format_version": FORMAT_VERSION, "epoch": epoch, "snapshot": snapshot.name,
            "world_size": ctx.world_size, "fingerprint": fingerprint,
            "model": _signature(model), "has_optimizer": optimizer is not None,
            "config": json.loads(config_json), "sha256": digests,
            "graph": _graph_summary(partition),
        }
        try:
            _write_atomic(root / LATEST, (json.dumps(latest, indent=1) + "\n").encode())
        except OSError as exc:
            failure = f"{type(exc).__name__}: {exc}"
        else:
            snapshots = sorted(p for p in root.glob("epoch-*") if p.is_dir() and p != snapshot)
            for old in snapshots[:max(0, len(snapshots) - (keep - 1))]:
                shutil.rmtree(old, ignore_errors=True)
    # every rank returns only once latest.json names this snapshot, so a load_checkpoint right
    # after the save (on any rank) finds it; a failed write fails on every rank, not only rank 0
    failure = ctx.comm.allgather_object(failure)[0]
    if failure is not None:
        raise RuntimeError(f"save_checkpoint: rank 0 could not write '{root / LATEST}': "
                           f"{failure}")
    return snapshot


def read_latest(path: str | Path) -> dict:
    """The parsed, validated ``latest.json`` of a checkpoint folder."""
    file = Path(path) / LATEST
    if not file.is_file():
        raise FileNotFoundError(f"no checkpoint at '{path}': '{file}' does not exist")
    try:
        latest = json.loads(file.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"malformed checkpoint metadata '{file}': not valid JSON ({e})"
                              ) from None
    if not isinstance(latest, dict):
        raise CheckpointError(f"malformed checkpoint metadata '{file}': not a JSON object")
    version = latest.get("format_version")
    if not isinstance(version, int):
        raise CheckpointError(f"malformed checkpoint metadata '{file}': no integer "
                              f"format_version")
    if version > FORMAT_VERSION:
        raise CheckpointError(f"checkpoint '{file}' has format version {version}, newer than "
                              f"this pyg_sar reads ({FORMAT_VERSION}); upgrade pyg_sar")
    expected = {"epoch": int, "snapshot": str, "world_size": int, "model": dict,
                "sha256": list, "config": dict}
    for key, kind in expected.items():
        if not isinstance(latest.get(key), kind):
            raise CheckpointError(f"malformed checkpoint metadata '{file}': '{key}' missing "
                                  f"or not {kind.__name__}")
    if "/" in latest["snapshot"] or latest["snapshot"].startswith("."):
        raise CheckpointError(f"malformed checkpoint metadata '{file}': bad snapshot name "
                              f"{latest['snapshot']!r}")
    return latest


def _check_model(latest: dict, model: torch.nn.Module, file: Path) -> None:
    saved, have = latest["model"], _signature(model)
    problems = [f"'{k}' is in the model but not in the checkpoint" for k in have if k not in saved]
    problems += [f"'{k}' is in the checkpoint but not in the model" for k in saved if k not in have]
    problems += [f"'{k}' is {saved[k][1]} {saved[k][0]} in the checkpoint but {have[k][1]} "
                 f"{have[k][0]} in the model" for k in have if k in saved and saved[k] != have[k]]
    if problems:
        more = f" (and {len(problems) - 4} more)" if len(problems) > 4 else ""
        raise CheckpointError(f"checkpoint '{file}' was written for a different model: "
                              + "; ".join(problems[:4]) + more)


def _check_rank_local_rows(saved: dict, model: torch.nn.Module, file: Path) -> None:
    """A rank-local table must have this rank's row count before its rows load."""
    from pyg_sar.nn.embedding import rank_local_names
    state = model.state_dict()
    for name in sorted(rank_local_names(model)):
        have, got = state[name].shape, getattr(saved.get(name), "shape", None)
        if got is not None and tuple(got) != tuple(have):
            raise CheckpointError(
                f"checkpoint file '{file}' holds {tuple(got)} rows for the rank-local "
                f"parameter '{name}' but the model has {tuple(have)}: shard the table for "
                f"this rank first (pyg_sar.shard_embedding(embedding, part), or one forward "
                f"of the converted model over the partition), then load")


def _check_compression(saved: Any, model: torch.nn.Module, file: Path) -> None:
    """Refuse a checkpoint whose compressors are not the model's (before anything loads)."""
    have = compressors_of(model)
    if not isinstance(saved, dict) or set(saved) != set(have):
        names = sorted(saved) if isinstance(saved, dict) else saved
        raise CheckpointError(f"checkpoint file '{file}' holds compression state for layers "
                              f"{names} but the model compresses {sorted(have)}; resume with "
                              f"the compression the run started with")
    for name, comp in have.items():
        state = saved[name]
        if not isinstance(state, dict) or state.get("describe") != repr(comp.describe()):
            got = state.get("describe") if isinstance(state, dict) else state
            raise CheckpointError(f"checkpoint file '{file}': layer '{name}' was compressed "
                                  f"with {got}, the model with {comp.describe()!r}")


def load_checkpoint(path: str | Path, model: torch.nn.Module,
                    optimizer: Optional[torch.optim.Optimizer] = None, *,
                    partition: Any = None, restore_rng: bool = True, missing_ok: bool = False,
                    ctx=None) -> Optional[Checkpoint]:
    """Restore this rank's model, optimizer and RNG states from the latest snapshot.

    With ``missing_ok=True`` a folder without a committed checkpoint (none yet, or a run killed
    before its first save) returns ``None`` and changes nothing, so one script both starts and
    resumes a run, as a launcher that restarts failed jobs needs (``torchrun --max-restarts``,
    a requeued Slurm job)::

        state = pyg_sar.load_checkpoint(folder, model, optimizer, missing_ok=True)
        first_epoch = 1 if state is None else state.epoch + 1

    Args:
        path: the checkpoint folder given to :func:`save_checkpoint`.
        model: a model of the same architecture (converted the same way); loaded in place.
        optimizer: loaded in place when given.
        partition: the rank's partition; refused unless it is the one the checkpoint was
            written for (same fingerprint).
        restore_rng: also restore torch / NumPy / Python RNG states (for bit-identical resume).
        missing_ok: return ``None`` when ``path`` holds no committed checkpoint (the ranks
            agree on it: collective), instead of raising ``FileNotFoundError``.
        ctx: the :class:`~pyg_sar.distributed.DistContext` (default: the current one).

    The step state of the model's compressors (:func:`pyg_sar.compression.compressors_of`)
    and this rank's error-feedback residuals are restored too; a checkpoint written with other
    compressors (codec, schedule, seed, error feedback or directions) is refused.

    **Another world size.** A checkpoint written by P ranks resumes on P' ranks (e.g. 4 -> 2
    after losing a host), given the partition of the same graph for P' (``partition``: its
    node and edge counts are checked; the fingerprint differs by nature). The parameters and
    optimizer state, the same on every rank, come from rank 0's file; rank-local tables
    (:func:`pyg_sar.shard_embedding`, sharded for this rank first) and the optimizer state of
    their rows are re-sharded by original node id from every rank's file. RNG states belong to
    the ranks that wrote them and are not restored (dropout masks differ from a run continued
    at P), and a compressed model is refused (its error-feedback residuals are per rank).

    Returns:
        What was restored, or ``None`` (``missing_ok`` and no checkpoint).

    Raises:
        FileNotFoundError: no checkpoint at ``path`` (without ``missing_ok``).
        CheckpointError: (a ``ValueError``) malformed or newer-format metadata, a rank file
            that fails its checksum, another partition (or, at another world size, another
            graph) or model.
    """
    ctx = _context(ctx)
    root = Path(path)
    if missing_ok:
        # Every rank must take the same branch: a folder seen by some ranks only is an error.
        present = ctx.comm.allgather_object((root / LATEST).is_file())
        if not any(present):
            return None
        if not all(present):
            raise CheckpointError(f"checkpoint '{root / LATEST}' is visible to ranks "
                                  f"{[r for r, p in enumerate(present) if p]} only; the folder "
                                  f"must be shared by every rank")
    latest = read_latest(root)
    meta_file = root / LATEST
    if latest["world_size"] != ctx.world_size:
        return _load_on_another_world_size(root, latest, model, optimizer, partition, ctx)
    fingerprint = _fingerprint(partition)
    saved_fp = latest.get("fingerprint")
    if fingerprint is not None and saved_fp != fingerprint:
        raise CheckpointError(
            f"checkpoint '{meta_file}' was written for partition {str(saved_fp)[:12]} but this "
            f"run uses partition {fingerprint[:12]} ('{getattr(partition, 'path', '?')}'); "
            f"resume on the partition the run started with")
    _check_model(latest, model, meta_file)
    if optimizer is not None and not latest.get("has_optimizer", False):
        raise CheckpointError(f"checkpoint '{meta_file}' holds no optimizer state")
    if len(latest["sha256"]) != ctx.world_size:
        raise CheckpointError(f"malformed checkpoint metadata '{meta_file}': "
                              f"{len(latest['sha256'])} checksums for {ctx.world_size} ranks")

    file = root / latest["snapshot"] / f"rank{ctx.rank}.pt"
    payload = _read_rank_file(root, latest, ctx.rank)

    _check_compression(payload.get("compression", {}), model, file)
    _check_rank_local_rows(payload["model"], model, file)
    with torch.no_grad():
        model.load_state_dict(payload["model"], strict=True)
    for name, comp in compressors_of(model).items():
        comp.load_state_dict(payload["compression"][name])
    restore_draw_counters(model, payload.get("draws", {}))
    if optimizer is not None:
        optimizer.load_state_dict(payload["optimizer"])
    if restore_rng:
        _set_rng_state(payload["rng"])
    return Checkpoint(epoch=int(payload["epoch"]), path=root / latest["snapshot"],
                      config=json.loads(payload["config_json"]),
                      extra=json.loads(payload["extra_json"]), fingerprint=saved_fp,
                      world_size=latest["world_size"])


def _read_rank_file(root: Path, latest: dict, rank: int) -> dict:
    """Rank ``rank``'s file of the latest snapshot, checked against its SHA-256 and read with
    ``weights_only=True``."""
    meta_file = root / LATEST
    file = root / latest["snapshot"] / f"rank{rank}.pt"
    if not file.is_file():
        raise FileNotFoundError(f"checkpoint file '{file}' is missing")
    data = file.read_bytes()
    if hashlib.sha256(data).hexdigest() != latest["sha256"][rank]:
        raise CheckpointError(f"checkpoint file '{file}' is damaged: its SHA-256 does not match "
                              f"'{meta_file}' (truncated or altered)")
    try:
        payload = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any refusal of the unpickler is a bad file
        raise CheckpointError(f"checkpoint file '{file}' cannot be read safely: {e}") from None
    if not isinstance(payload, dict) or payload.get("epoch") != latest["epoch"] or \
            payload.get("rank") != rank:
        raise CheckpointError(f"checkpoint file '{file}' does not belong to epoch "
                              f"{latest['epoch']} / rank {rank}")
    return payload


def _load_on_another_world_size(root: Path, latest: dict, model: torch.nn.Module,
                                optimizer: Optional[torch.optim.Optimizer], partition: Any,
                                ctx) -> Checkpoint:
    """Resume a checkpoint of P ranks on this job's P' ranks, on a partition of the same graph
    for P': the model and optimizer state every rank shares, rank-local tables re-sharded by
    node id (:mod:`pyg_sar.reshard`). RNG states are per rank and are not restored, so only a
    run without randomness continues exactly as it would have at P."""
    meta_file = root / LATEST
    saved = latest["world_size"]
    if len(latest["sha256"]) != saved:
        raise CheckpointError(f"malformed checkpoint metadata '{meta_file}': "
                              f"{len(latest['sha256'])} checksums for {saved} ranks")
    have = _graph_summary(partition)
    if have is not None and latest.get("graph") not in (None, have):
        raise CheckpointError(f"checkpoint '{meta_file}' was written for a graph of "
                              f"{latest['graph']} but this run's partition is of {have}; "
                              f"resume on a partition of the graph the run started with")
    _check_model(latest, model, meta_file)
    if optimizer is not None and not latest.get("has_optimizer", False):
        raise CheckpointError(f"checkpoint '{meta_file}' holds no optimizer state")
    if compressors_of(model):
        raise CheckpointError(f"checkpoint '{meta_file}' was written by {saved} ranks but this "
                              f"job has {ctx.world_size}: a compressed model's error-feedback "
                              f"residuals belong to the ranks that wrote them; resume on "
                              f"{saved} ranks")
    payloads = [_read_rank_file(root, latest, r) for r in range(saved)]
    try:
        model_state, optimizer_state = reshard(payloads, model, optimizer)
    except ReshardError as e:
        raise CheckpointError(f"checkpoint '{meta_file}' (written by {saved} ranks) cannot be "
                              f"resumed on {ctx.world_size}: {e}") from None
    _check_rank_local_rows(model_state, model, root / latest["snapshot"])
    with torch.no_grad():
        model.load_state_dict(model_state, strict=True)
    if optimizer is not None:
        optimizer.load_state_dict(optimizer_state)
    first = payloads[0]
    restore_draw_counters(model, first.get("draws", {}))
    return Checkpoint(epoch=int(first["epoch"]), path=root / latest["snapshot"],
                      config=json.loads(first["config_json"]),
                      extra=json.loads(first["extra_json"]), fingerprint=latest.get("fingerprint"),
                      world_size=saved)
