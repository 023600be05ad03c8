r"""Full-graph inference written to disk in ORIGINAL node order.

After training, every rank holds the outputs of its own nodes in its own (partition) order.
:func:`predict` runs one no-grad forward pass over the whole graph (the model in eval mode, in
its :class:`~pyg_sar.SARConfig` mode; its training flag is restored afterwards) and writes the
output as ONE ``.npy`` array whose row ``i`` is the output of the node with original id ``i``::

    z = pyg_sar.predict(model, data, out="preds.npy")           # every rank, the same call
    logits = numpy.load("preds.npy")                            # [N, C], original order

:func:`predict_pairs` writes the scores of given node pairs (link prediction) in the pairs'
order. Both are collective: every rank calls them with the same ``out``.

Where the bytes go (``storage=``):

* ``"gather"`` (the default; works everywhere, also across hosts without a shared file system):
  rank 0 writes the file; the other ranks send it their rows with their destination row
  numbers, ``batch`` rows per message, one message per rank in turn (round robin), so rank 0
  holds at most one message besides the file's pages and no rank waits behind a whole other
  rank's rows.
* ``"shared"`` (every rank sees ``out``'s folder: one host, or a shared file system): rank 0
  writes the ``.npy`` header of the pre-sized array; each rank opens it with
  :func:`numpy.lib.format.open_memmap` (``mode="r+"``) and writes its rows at their original
  ids itself, ``batch`` rows at a time; nothing crosses the network but a few small
  agreement messages.

Both give the same bytes. ``batch`` (rows per message or per write) defaults to what fits in
64 MiB.

Never a half-written output under the final name: the array is written to a hidden temporary
name in the same folder (``.<name>.tmp-<token>``), fsynced, and renamed over ``out`` by rank 0
only once every rank has written its rows; the folder is fsynced after the rename. A failure on
any rank (the forward pass or ``method`` raising, rows of the wrong shape or dtype, a failed
write) removes the temporary file and raises on every rank: the failing rank re-raises its own
exception, the others a ``RuntimeError`` (``ValueError`` when every failure is one) naming the
failing rank. (An error that leaves a rank inside a collective of the forward pass, e.g. a rank
that raises before its layers exchanged their rows, is seen by the others as the transport's
timeout or, with supervision, at once; nothing is written then either.)

Heterogeneous graphs (a :class:`~pyg_sar.partition.HeteroPartition`): the model returns a dict
``node type -> Tensor`` (a ``to_hetero`` model: ``model(data.x_dict, data.edge_index_dict)``);
``out`` is a FOLDER holding ``<node type>.npy`` for every returned type, each in the type's
original ids (``data.node_ids_dict``). The folder is written as a hidden sibling and renamed
into place as a whole (an existing ``out`` folder is replaced, its old content removed).

From the shell, after ``python -m pyg_sar.train --parts DIR --checkpoint CK``::

    mpiexec -n 2 python -m pyg_sar.predict --parts DIR --checkpoint CK --out preds.npy \
        [--output logits|probabilities|embedding] [--storage gather|shared]

rebuilds the model as the training run did (its flags are in the checkpoint), loads the
checkpoint (same partition and number of ranks) and writes the array.

The bf16 outputs are written as float32 (NumPy has no bfloat16); other dtypes as they are.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import types
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import numpy as np

from pyg_sar.cli_types import HelpFormatter

STORAGES = ("gather", "shared")
OUTPUTS = ("logits", "probabilities", "embedding")
_CHUNK_BYTES = 1 << 26  # default rows per message / write: 64 MiB of them
_TAG = 7411  # ids; _TAG + 1: rows


# ---------------------------------------------------------------------------- agreement
def _describe(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


def _agree(comm: Any, what: str, error: Optional[str], own: Optional[BaseException],
           payload: Any = None) -> list:
    """All-gather ``[error, payload]``; raise on every rank if any rank reported an error (the
    failing rank re-raises its own exception ``own``). Returns the payloads."""
    status = comm.allgather_object([error, payload])
    failed = [(r, e) for r, (e, _) in enumerate(status) if e is not None]
    if failed:
        if own is not None:
            raise own
        text = "; ".join(f"rank {r}: {e}" for r, e in failed)
        kinds = {e.split(":", 1)[0] for _, e in failed}
        cls = ValueError if kinds <= {"ValueError"} else RuntimeError
        raise cls(f"pyg_sar.predict: {what} failed on {text}") from None
    return [p for _, p in status]


# ---------------------------------------------------------------------------- local rows
def _to_numpy(value: Any, what: str) -> np.ndarray:
    import torch
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor (got {type(value).__name__})")
    value = value.detach()
    if value.dtype == torch.bfloat16:
        value = value.float()  # NumPy has no bfloat16
    if value.dim() == 0:
        raise ValueError(f"{what} must have one row per node or pair (got a scalar)")
    return np.ascontiguousarray(value.cpu().numpy())


def _is_hetero(data: Any) -> bool:
    return hasattr(data, "x_dict") and hasattr(data, "edge_index_dict")


def _ids(data: Any, world: int, rows: int, what: str) -> np.ndarray:
    """Original ids of the rank's rows (``data.node_ids``); a plain single-process graph
    without them is in original order already."""
    ids = getattr(data, "node_ids", None)
    if ids is None:
        if world > 1:
            raise ValueError(f"{what}: the data has no node_ids (original ids of the rank's "
                             f"rows): pass the PartitionData of pyg_sar.distribute or "
                             f"load_partition")
        return np.arange(rows, dtype=np.int64)
    return np.ascontiguousarray(ids.cpu().numpy().astype(np.int64, copy=False))


def _check_rows(rows: np.ndarray, ids: np.ndarray, what: str) -> None:
    if rows.shape[0] != ids.shape[0]:
        raise ValueError(f"{what} has {rows.shape[0]} rows but the rank holds {ids.shape[0]} "
                         f"nodes: the output must have one row per local node, in local order")


def _node_arrays(result: Any, data: Any, world: int) -> dict[str, tuple]:
    """``name -> (rows, ids, expected total or None)`` of a forward pass's result."""
    if not _is_hetero(data):
        rows = _to_numpy(result, "the model's output")
        ids = _ids(data, world, rows.shape[0], "pyg_sar.predict")
        _check_rows(rows, ids, "the model's output")
        meta = getattr(data, "meta", None) or {}
        total = meta.get("num_nodes") if "hetero" not in meta else None
        return {"": (rows, ids, total)}
    if not isinstance(result, dict):
        raise TypeError(f"on a heterogeneous graph the output must be a dict node type -> "
                        f"Tensor (got {type(result).__name__})")
    ids_dict = getattr(data, "node_ids_dict", None)
    offsets = getattr(data, "node_offsets_dict", {}) or {}
    out = {}
    for key, value in result.items():
        if not isinstance(key, str) or not key or "/" in key or key.startswith(".") or \
                "\0" in key:
            raise ValueError(f"node type {key!r} cannot name a file in the output folder")
        rows = _to_numpy(value, f"the output of node type {key!r}")
        if ids_dict is None:  # a plain HeteroData in one process
            if world > 1:
                raise ValueError("pyg_sar.predict: pass the HeteroPartition of "
                                 "pyg_sar.distribute / load_partition")
            ids = np.arange(rows.shape[0], dtype=np.int64)
        elif key not in ids_dict:
            raise ValueError(f"the output has node type {key!r}, which the graph does not "
                             f"have (node types: {sorted(ids_dict)})")
        else:
            ids = np.ascontiguousarray(ids_dict[key].cpu().numpy().astype(np.int64))
        _check_rows(rows, ids, f"the output of node type {key!r}")
        total = offsets[key][-1] if key in offsets else None
        out[key] = (rows, ids, total)
    return out


# ---------------------------------------------------------------------------- writing
def _put(array: np.ndarray, ids: np.ndarray, rows: np.ndarray) -> None:
    """``array[ids] = rows``, in ascending row order (sequential pages)."""
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= array.shape[0]):
        raise ValueError(f"row ids out of range [0, {array.shape[0]})")
    order = np.argsort(ids, kind="stable")
    array[ids[order]] = rows[order]


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_collective(ctx: Any, target: Path, arrays: dict[str, tuple], *, directory: bool,
                      storage: str, batch: Optional[int], error: Optional[str],
                      own: Optional[BaseException]) -> Path:
    """Write every rank's ``arrays`` (``name -> (rows, ids or None, expected total)``; ``ids``
    None: this rank's rows follow the lower ranks' ones) as ``target`` (a ``.npy`` file, or a
    folder of ``<name>.npy``); collective, see the module's docstring."""
    from pyg_sar.partition.storage import _fsync_dir, commit_dir
    comm, rank, world = ctx.comm, ctx.rank, ctx.world_size

    # 1. every rank's outcome and the shape of its rows
    shapes = {name: [list(rows.shape[1:]), rows.dtype.str, int(rows.shape[0]), total]
              for name, (rows, _, total) in arrays.items()} if error is None else None
    if rank == 0 and error is None:
        token = uuid.uuid4().hex[:12]
    else:
        token = None
    gathered = _agree(comm, "computing the output", error, own, [shapes, token, batch])
    token = gathered[0][1]
    names = sorted(gathered[0][0])
    problem = None
    for r, (sh, _, _) in enumerate(gathered):
        if sorted(sh) != names:
            problem = (f"ranks return different outputs: rank 0 {names or ['(one array)']}, "
                       f"rank {r} {sorted(sh) or ['(one array)']}")
            break
        for name in names:
            if sh[name][:2] != gathered[0][0][name][:2]:
                what = f"node type {name!r}: " if name else ""
                problem = (f"{what}rank {r} returns rows {sh[name][0]} of dtype {sh[name][1]}, "
                           f"rank 0 rows {gathered[0][0][name][0]} of dtype "
                           f"{gathered[0][0][name][1]}")
                break
        if problem:
            break
    totals, starts = {}, {}
    for name in names:
        counts = [sh[name][2] for sh, _, _ in gathered]
        totals[name] = sum(counts)
        starts[name] = sum(counts[:rank])
        expected = gathered[0][0][name][3]
        if problem is None and expected is not None and int(expected) != totals[name]:
            problem = (f"the ranks hold {totals[name]} rows of {name or 'the output'} but the "
                       f"graph has {expected} nodes")
    if problem is not None:
        raise ValueError(f"pyg_sar.predict: {problem}")
    if not names:
        raise ValueError("pyg_sar.predict: the output holds no array")
    first = gathered[0][0]
    layout = {name: (tuple([totals[name], *first[name][0]]), np.dtype(first[name][1]))
              for name in names}
    rows_per_msg = {}
    for name in names:
        row_bytes = max(1, math.prod(layout[name][0][1:]) * layout[name][1].itemsize)
        agreed = gathered[0][2]
        rows_per_msg[name] = int(agreed) if agreed else max(1, _CHUNK_BYTES // row_bytes)
    local = {}
    for name in names:
        rows, ids, _ = arrays[name]
        if ids is None:
            ids = np.arange(starts[name], starts[name] + rows.shape[0], dtype=np.int64)
        local[name] = (rows, ids)

    target = Path(target)
    tmp = target.parent / f".{target.name}.tmp-{token}"
    files = {name: (tmp / f"{name}.npy" if directory else tmp) for name in names}

    def cleanup() -> None:
        if rank == 0:
            if directory:
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink(missing_ok=True)

    # 2. rank 0 creates the pre-sized array(s) under the temporary name
    error = own = None
    maps = {}
    if rank == 0:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if directory:
                if target.exists() and not target.is_dir():
                    raise ValueError(f"output '{target}' exists and is not a folder (a "
                                     f"heterogeneous output is a folder of <type>.npy)")
                tmp.mkdir()
            elif target.is_dir():
                raise ValueError(f"output '{target}' is a folder (pass a file name, e.g. "
                                 f"preds.npy)")
            for name in names:
                shape, dtype = layout[name]
                maps[name] = np.lib.format.open_memmap(files[name], mode="w+", dtype=dtype,
                                                       shape=shape)
                if storage == "shared":
                    maps[name].flush()
                    del maps[name]
        except Exception as err:  # noqa: BLE001 - every rank must learn of it
            error, own = _describe(err), err
            maps.clear()
            cleanup()
    _agree(comm, "creating the output file", error, own)

    # 3. every rank's rows reach the file
    error = own = None
    try:
        if storage == "shared":
            _write_shared(files, local, rows_per_msg)
        else:
            error, own = _write_gathered(comm, rank, world, names, files, maps, local,
                                         gathered, rows_per_msg, layout)
    except Exception as err:  # noqa: BLE001
        error, own = _describe(err), err
    maps.clear()
    try:
        _agree(comm, "writing the output", error, own)
    except BaseException:
        cleanup()
        raise

    # 4. rank 0 moves it into place
    error = own = None
    if rank == 0:
        try:
            if directory:
                commit_dir(tmp, target, overwrite=True)
            else:
                os.replace(tmp, target)
                _fsync_dir(target.parent)
        except Exception as err:  # noqa: BLE001
            error, own = _describe(err), err
            cleanup()
    _agree(comm, f"renaming the output to '{target}'", error, own)
    return target


def _write_shared(files: dict, local: dict, rows_per_msg: dict) -> None:
    """Each rank writes its rows into the pre-sized file(s) itself."""
    for name, path in files.items():
        rows, ids = local[name]
        array = np.lib.format.open_memmap(path, mode="r+")
        try:
            if tuple(array.shape[1:]) != rows.shape[1:] or array.dtype != rows.dtype:
                raise ValueError(f"'{path}' holds {array.dtype} {array.shape}, not what the "
                                 f"ranks agreed on: is the folder shared by every rank?")
            step = rows_per_msg[name]
            for start in range(0, rows.shape[0], step):
                _write_chunk(array, ids[start:start + step], rows[start:start + step])
            array.flush()
        finally:
            del array
        _fsync(path)


def _write_chunk(array: np.ndarray, ids: np.ndarray, rows: np.ndarray) -> None:
    _put(array, ids, rows)


def _write_gathered(comm: Any, rank: int, world: int, names: list, files: dict, maps: dict,
                    local: dict, gathered: list, rows_per_msg: dict, layout: dict):
    """Rank 0 writes its rows, then receives the others' in messages of ``rows_per_msg``
    rows, one per rank in turn. A write that fails on rank 0 is reported after every message
    has been received (so no rank is left waiting). Returns ``(error, own)``."""
    import torch
    error = own = None
    for name in names:
        rows, ids = local[name]
        step = rows_per_msg[name]
        chunks = [math.ceil(sh[name][2] / step) for sh, _, _ in gathered]
        if rank != 0:
            for start in range(0, rows.shape[0], step):
                part_ids = torch.from_numpy(np.ascontiguousarray(ids[start:start + step]))
                part_rows = torch.from_numpy(np.ascontiguousarray(rows[start:start + step]))
                works = [comm.isend(part_ids, 0, tag=_TAG), comm.isend(part_rows, 0,
                                                                       tag=_TAG + 1)]
                for work in works:
                    work.wait()
            continue
        array = maps[name]
        try:
            for start in range(0, rows.shape[0], step):
                _write_chunk(array, ids[start:start + step], rows[start:start + step])
        except Exception as err:  # noqa: BLE001
            error, own = error or _describe(err), own or err
        shape, dtype = layout[name]
        counts = [sh[name][2] for sh, _, _ in gathered]
        for c in range(max(chunks[1:], default=0)):
            for r in range(1, world):
                if c >= chunks[r]:
                    continue
                n = min(step, counts[r] - c * step)
                part_ids = torch.empty(n, dtype=torch.int64)
                part_rows = torch.from_numpy(np.empty((n, *shape[1:]), dtype=dtype))
                works = [comm.irecv(part_ids, r, tag=_TAG), comm.irecv(part_rows, r,
                                                                       tag=_TAG + 1)]
                for work in works:
                    work.wait()
                if error is None:
                    try:
                        _write_chunk(array, part_ids.numpy(), part_rows.numpy())
                    except Exception as err:  # noqa: BLE001
                        error, own = _describe(err), err
        if error is None:
            try:
                array.flush()
            except Exception as err:  # noqa: BLE001
                error, own = _describe(err), err
        del array
        maps.pop(name, None)
        if error is None:
            try:
                _fsync(files[name])
            except Exception as err:  # noqa: BLE001
                error, own = _describe(err), err
    return error, own


# ---------------------------------------------------------------------------- public API
def _check_options(storage: str, batch: Optional[int]) -> None:
    if storage not in STORAGES:
        raise ValueError(f"pyg_sar.predict: storage must be one of {STORAGES} (got "
                         f"{storage!r})")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or
                              batch < 1):
        raise ValueError(f"pyg_sar.predict: batch must be a positive integer or None (got "
                         f"{batch!r})")


def _context_of(data: Any, context: Any) -> Any:
    from pyg_sar.distributed.context import resolve_context
    from pyg_sar.graph import DistGraph
    if context is not None:
        return resolve_context(context)
    if isinstance(data, DistGraph):
        return data.context
    graph = getattr(data, "edge_index", None)
    if not isinstance(graph, DistGraph) and _is_hetero(data):
        graph = next(iter(data.edge_index_dict.values()), None)
    if isinstance(graph, DistGraph):
        return graph.context
    return resolve_context(None)


def predict(model: Any, data: Any, out: str | os.PathLike, *,
            method: Optional[Callable[[Any, Any], Any]] = None, batch: Optional[int] = None,
            storage: str = "gather", context: Any = None) -> Path:
    r"""Run ``model`` over the whole graph without gradients and write its output, in
    ORIGINAL node order, to ``out``; collective (every rank, the same ``out``).

    The model is put in eval mode for the pass and its training flag restored afterwards; the
    pass runs under ``torch.no_grad()`` in the model's :class:`~pyg_sar.SARConfig` mode.

    Args:
        model: the (converted) model.
        data: this rank's :class:`~pyg_sar.PartitionData` (``model(data.x, data.edge_index)``
            by default; its ``node_ids`` place the rows) or
            :class:`~pyg_sar.partition.HeteroPartition` (``model(data.x_dict,
            data.edge_index_dict)``, a dict per node type; ``node_ids_dict`` places them).
            With one process a plain PyG ``Data`` is written in its own order.
        out: a ``.npy`` file (a folder of ``<node type>.npy`` for a heterogeneous graph);
            replaced if it exists.
        method: ``(model, data) -> Tensor`` (a dict of them on a heterogeneous graph) of the
            rank's rows in local order, to run something else than the default call, e.g.
            ``lambda m, d: m(d.x, d.edge_index).softmax(-1)`` or ``m.encode(...)``. It runs
            under ``no_grad`` with the model in eval mode too.
        batch: rows per message (``storage="gather"``) or per write (``"shared"``); default:
            as many as fit in 64 MiB.
        storage: ``"gather"`` (rank 0 writes everything it receives; no shared file system
            needed) or ``"shared"`` (each rank writes its own rows into the file; every rank
            must see ``out``'s folder).
        context: the DistContext (default: the graph's).

    Returns:
        ``Path(out)`` (on every rank, once the file is complete under its final name).

    Raises:
        ValueError / RuntimeError: on every rank, when any rank failed (see the module's
            docstring); nothing is left under ``out`` or under a temporary name then.
    """
    import torch
    _check_options(storage, batch)
    ctx = _context_of(data, context)
    hetero = _is_hetero(data)
    error = own = None
    arrays: dict = {}
    was_training = getattr(model, "training", False)
    try:
        if hasattr(model, "eval"):
            model.eval()
        with torch.no_grad():
            if method is not None:
                result = method(model, data)
            elif hetero:
                result = model(data.x_dict, data.edge_index_dict)
            else:
                result = model(data.x, data.edge_index)
        arrays = _node_arrays(result, data, ctx.world_size)
    except Exception as err:  # noqa: BLE001 - every rank must learn of it
        error, own = _describe(err), err
    finally:
        if hasattr(model, "train"):
            model.train(was_training)
    return _write_collective(ctx, Path(out), arrays, directory=hetero, storage=storage,
                             batch=batch, error=error, own=own)


def predict_pairs(model_or_fn: Any, z_or_data: Any, pairs: Any, out: str | os.PathLike, *,
                  ids: str = "original", same_pairs: bool = False, graph: Any = None,
                  batch: Optional[int] = None, storage: str = "gather",
                  context: Any = None) -> Path:
    r"""Score node pairs and write the scores, in the pairs' order, to ``out`` (a ``.npy``
    file); collective.

    Which pairs, in which order:

    * ``same_pairs=False`` (default): each rank passes its own share of the pairs (e.g. the
      ``edge_label_index`` of its split, or its slice of a list); the file holds rank 0's
      scores, then rank 1's, and so on (rank order, each rank's in its order).
    * ``same_pairs=True``: every rank passes the SAME pairs; each scores a contiguous 1/P of
      them and the file holds the scores in the pairs' order.

    Args:
        model_or_fn: a link model with ``decode(z, edge_label_index)`` taking pairs in NEW ids
            (the ported link examples and PyG's converted ``GAE``; the pairs are mapped to new
            ids first when ``ids="original"``), whose ``encode(x, edge_index)`` (or
            ``forward``) makes ``z`` when ``z_or_data`` is a partition; or a decoder
            ``fn(z_src, z_dst) -> Tensor`` of the pair ends' rows, which this function gathers
            from their owners (:func:`pyg_sar.gather`), e.g.
            ``lambda s, d: (s * d).sum(-1)``.
        z_or_data: this rank's embeddings ``z`` (local order) or its
            :class:`~pyg_sar.PartitionData` (then ``model_or_fn`` must be a link model).
        pairs: ``[2, m]`` integer tensor of pair ends.
        ids: ``"original"`` (ids of the graph before partitioning) or ``"new"`` (the
            partition's, as :func:`pyg_sar.distribute` / ``load_link_split`` give them).
        same_pairs: see above.
        graph: the partition's DistGraph (or PartitionData) when ``z_or_data`` is a tensor
            (needed for ``ids="original"`` with several ranks).
        batch, storage, context: as :func:`predict`.

    Returns:
        ``Path(out)``.
    """
    import torch

    from pyg_sar.graph import DistGraph
    _check_options(storage, batch)
    if ids not in ("original", "new"):
        raise ValueError(f"pyg_sar.predict_pairs: ids must be 'original' or 'new' (got "
                         f"{ids!r})")
    is_tensor = isinstance(z_or_data, torch.Tensor)
    if not is_tensor:
        graph = z_or_data.edge_index
    elif graph is not None and not isinstance(graph, DistGraph):
        graph = graph.edge_index  # a PartitionData
    ctx = _context_of(graph if graph is not None else z_or_data, context)
    if not isinstance(pairs, torch.Tensor) or pairs.dim() != 2 or pairs.shape[0] != 2:
        raise ValueError(f"pyg_sar.predict_pairs: pairs must be a [2, m] tensor (got "
                         f"{getattr(pairs, 'shape', type(pairs).__name__)})")
    if same_pairs:
        m, world, rank = pairs.shape[1], ctx.world_size, ctx.rank
        pairs = pairs[:, m * rank // world:m * (rank + 1) // world]
    link_model = hasattr(model_or_fn, "decode")
    if ids == "original" and graph is None and ctx.world_size > 1:
        raise ValueError("pyg_sar.predict_pairs: ids=\"original\" needs the partition's "
                         "graph to map them to new ids: pass graph=part.edge_index")
    if not is_tensor and not link_model:
        raise TypeError("pyg_sar.predict_pairs: with a partition as z_or_data, model_or_fn "
                        "must be a link model (encode / decode); pass z to score with a "
                        "decoder function")
    error = own = None
    arrays: dict = {}
    was_training = getattr(model_or_fn, "training", None)
    try:
        if isinstance(model_or_fn, torch.nn.Module):
            model_or_fn.eval()
        with torch.no_grad():
            if is_tensor:
                z = z_or_data
            else:
                encode = getattr(model_or_fn, "encode", model_or_fn)
                z = encode(z_or_data.x, z_or_data.edge_index)
            if link_model:
                index = pairs
                if ids == "original" and graph is not None:
                    from pyg_sar.link.split import to_new_ids
                    index = to_new_ids(graph, pairs)
                scores = model_or_fn.decode(z, index)
            else:
                from pyg_sar.link.gather import gather
                kind = None if graph is None and ctx.world_size == 1 else ids
                ends = gather(z, pairs.reshape(-1), ids=kind, graph=graph, context=ctx)
                src, dst = ends.chunk(2)
                scores = model_or_fn(src, dst)
        rows = _to_numpy(scores, "the pairs' scores")
        if rows.shape[0] != pairs.shape[1]:
            raise ValueError(f"the decoder returned {rows.shape[0]} scores for "
                             f"{pairs.shape[1]} pairs")
        arrays = {"": (rows, None, None)}
    except Exception as err:  # noqa: BLE001
        error, own = _describe(err), err
    finally:
        if was_training is not None and isinstance(model_or_fn, torch.nn.Module):
            model_or_fn.train(was_training)
    return _write_collective(ctx, Path(out), arrays, directory=False, storage=storage,
                             batch=batch, error=error, own=own)


# ---------------------------------------------------------------------------- CLI
_MODEL_FLAGS = ("model", "layers", "hidden", "heads", "norm", "dtype", "mode")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pyg_sar.predict",
        description="Write a trained model's output for every node, in original node order "
                    "(one .npy array), from a partition folder and a checkpoint of python -m "
                    "pyg_sar.train. Launch it like the training run (same number of ranks).",
        formatter_class=HelpFormatter, epilog="""examples:
  mpiexec -n 2 python -m pyg_sar.train --parts parts --checkpoint ckpt
  mpiexec -n 2 python -m pyg_sar.predict --parts parts --checkpoint ckpt --out logits.npy
  mpiexec -n 2 python -m pyg_sar.predict --parts parts --checkpoint ckpt \\
      --output embedding --out emb.npy           the input of the last layer, every node
""")
    p.add_argument("--parts", required=True, help="the partition folder the model was trained on")
    p.add_argument("--checkpoint", required=True,
                   help="checkpoint folder of python -m pyg_sar.train --checkpoint")
    p.add_argument("--out", required=True, help="the .npy file to write")
    p.add_argument("--output", choices=OUTPUTS, default="logits",
                   help="logits (the model's output), probabilities (their softmax) or "
                        "embedding (the input of the last layer); default logits")
    p.add_argument("--storage", choices=STORAGES, default="gather",
                   help="gather: rank 0 writes everything (no shared file system needed; "
                        "default); shared: each rank writes its own rows (every rank must "
                        "see --out's folder)")
    p.add_argument("--batch", type=int, default=None,
                   help="rows per message / write (default: 64 MiB of rows)")
    p.add_argument("--backend", default=None, help="mpi, gloo or nccl (default: by launcher)")
    g = p.add_argument_group("model", "default: as the training run recorded in the checkpoint")
    g.add_argument("--model", default=None, help="gcn, sage, gin or gat")
    g.add_argument("--layers", type=int, default=None)
    g.add_argument("--hidden", type=int, default=None)
    g.add_argument("--heads", type=int, default=None)
    g.add_argument("--norm", default=None, choices=("none", "batch_norm"))
    g.add_argument("--dtype", default=None, choices=("float32", "float64"))
    g.add_argument("--mode", default=None, choices=("sar", "sa", "halo"))
    return p


def _training_args(args: argparse.Namespace, config: dict) -> argparse.Namespace:
    """The training run's arguments: train's defaults, the checkpoint's config, the flags."""
    from pyg_sar.train_args import build_parser
    values = vars(build_parser().parse_args([]))
    values.update({k: v for k, v in config.items() if k in values})
    values.update({k: getattr(args, k) for k in _MODEL_FLAGS if getattr(args, k) is not None})
    return argparse.Namespace(**values)


def run(args: argparse.Namespace) -> Path:
    import torch

    import pyg_sar
    from pyg_sar import train_node as train
    from pyg_sar.checkpoint import read_latest
    from pyg_sar.compression.cli import compressor_from_args
    from pyg_sar.distributed.supervision import supervision_requested
    ctx = pyg_sar.init(backend=args.backend, supervise=supervision_requested(None, True))
    targs = _training_args(args, read_latest(args.checkpoint)["config"])
    part = pyg_sar.load_partition(args.parts, ctx.rank, world_size=ctx.world_size, context=ctx)
    if not isinstance(part, pyg_sar.PartitionData):
        raise ValueError(f"'{args.parts}' holds a heterogeneous partition; this CLI predicts "
                         f"with the homogeneous models of python -m pyg_sar.train (call "
                         f"pyg_sar.predict from a script)")
    dtype = train.DTYPES[targs.dtype]
    num_classes = int(part.meta.get("num_classes") or int(part.y.max()) + 1)
    model = train.build_model(targs, part.x.shape[1], num_classes).to(dtype)
    if targs.precision == "bf16-true":
        model = model.bfloat16()
    config = pyg_sar.SARConfig(mode=targs.mode, pipeline_depth=targs.pipeline_depth,
                               compression=compressor_from_args(targs),
                               wire_dtype=train.WIRE_DTYPES[targs.wire_dtype])
    pyg_sar.convert(model, config)
    state = pyg_sar.load_checkpoint(args.checkpoint, model, partition=part, restore_rng=False,
                                    ctx=ctx)
    x = part.x.to(dtype)
    if targs.precision == "bf16-true":
        x = x.bfloat16()
    captured: dict = {}
    if args.output == "embedding":
        def keep_input(_module, inputs):
            captured["z"] = inputs[0]
        model.convs[-1].register_forward_pre_hook(keep_input)

    def method(m, d):
        with train.forward_precision(targs, x.device):
            logits = m(x, d.edge_index)
        if args.output == "embedding":
            return captured["z"]
        logits = logits.float() if logits.dtype == torch.bfloat16 else logits
        return logits.softmax(-1) if args.output == "probabilities" else logits

    path = predict(model, part, args.out, method=method, storage=args.storage,
                   batch=args.batch, context=ctx)
    if ctx.rank == 0:
        array = np.load(path, mmap_mode="r")
        print(f"pyg_sar.predict: wrote {args.output} {list(array.shape)} {array.dtype} of "
              f"the checkpoint at epoch {state.epoch} to {path}", flush=True)
    return path


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.batch is not None and args.batch < 1:
        build_parser().error("argument --batch: must be a positive integer")
    run(args)
    return 0


class _CallableModule(types.ModuleType):
    """``pyg_sar.predict`` is this module (``python -m pyg_sar.predict``) and the function:
    calling the module calls :func:`predict`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Path:
        return predict(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    sys.exit(main())
