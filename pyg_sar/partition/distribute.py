r"""``pyg_sar.distribute``: partition an in-memory graph inside a running job.

Every rank calls :func:`distribute` with the same PyG ``Data``, after the same preprocessing
the single-process script does (feature transforms such as ``T.NormalizeFeatures()``,
``T.GCNNorm()``, ``T.ToSparseTensor()``, splits): the parts hold the tensors exactly as given.
Rank 0 partitions it with :func:`~pyg_sar.partition.partition_graph` into a private temporary
folder and sends every other rank the files of its part (``meta.json`` and ``part{r}/``) over
the job's communicator, so no shared file system is needed. Each rank writes its files into a
temporary folder of its own, loads them with :func:`~pyg_sar.partition.load_partition` (which
verifies every file's SHA-256 against ``meta.json``), and removes the folder. An error on rank
0 while partitioning (bad data, a full disk) reaches every rank as an error naming it; an error
on any rank while writing or loading its part is reported on every rank too.

For a large graph, partition once offline (``python -m pyg_sar.partition``) and load with
:func:`~pyg_sar.partition.load_partition`: :func:`distribute` repeats the partitioning in every
run and holds the whole graph in every rank's memory.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

from pyg_sar.partition import format as fmt
from pyg_sar.partition.assign import Balance
from pyg_sar.partition.hetero import HeteroPartition
from pyg_sar.partition.link_split import (
    GRAPH_DIR,
    LINK_META,
    is_link_folder,
    load_link_split,
)
from pyg_sar.partition.loader import PartitionData, load_partition
from pyg_sar.partition.storage import write_file_atomic

_CHUNK_BYTES = 1 << 26  # one message carries at most 64 MiB of a part's files
_TAG = 7301
# Rank 0 may partition for a long time while the others wait (METIS on a large graph).
DEFAULT_PARTITION_TIMEOUT = 3600.0


def _part_files(root: Path, rank: int) -> list[str]:
    """The files ``load_partition`` (or ``load_link_split``) reads for ``rank``, relative to
    ``root``, the metadata last."""
    if is_link_folder(root):
        graph = [f"{GRAPH_DIR}/{rel}" for rel in _part_files(root / GRAPH_DIR, rank)]
        pairs = sorted(p.relative_to(root).as_posix() for p in (root / "link").rglob("*")
                       if p.is_file() and p.parent.name == fmt.part_dir(rank))
        return graph + pairs + [LINK_META]
    part = root / fmt.part_dir(rank)
    files = sorted(p.relative_to(root).as_posix() for p in part.rglob("*") if p.is_file())
    return files + [fmt.META_FILE]


def _describe(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


def _raise_remote(what: str, errors: list[Optional[str]], rank: int,
                  own: Optional[BaseException]) -> None:
    """Raise on every rank if any rank reported an error (``own``: this rank's exception)."""
    failed = [(r, e) for r, e in enumerate(errors) if e is not None]
    if not failed:
        return
    if own is not None:
        raise own
    text = "; ".join(f"rank {r}: {e}" for r, e in failed)
    kinds = {e.split(":", 1)[0] for _, e in failed}
    cls = ValueError if kinds <= {"ValueError", "MetaError"} else RuntimeError
    raise cls(f"pyg_sar.distribute: {what} failed on {text}") from None


def distribute(data: Any, num_parts: Optional[int] = None, *, method: str = "metis",
               seed: int = 0, balance: Optional[Balance] = None, context: Any = None,
               timeout: Optional[float] = None) -> PartitionData | HeteroPartition:
    r"""Partition ``data`` (on rank 0) and return this rank's part; collective.

    Every rank calls it with the same ``data`` (only rank 0's is read), after the preprocessing
    the single-process script does (``T.NormalizeFeatures()``, ``T.GCNNorm()``,
    ``T.ToSparseTensor()``, splits): partitioning changes no tensor. The parts travel over the
    communicator (no shared file system); every rank checks the files it receives against their
    SHA-256 and keeps nothing on disk. Without a launcher (one process) the whole graph is the
    one part.

    Example::

        dataset = Planetoid(root, "Cora", transform=T.NormalizeFeatures())
        data = pyg_sar.distribute(dataset[0])   # every rank, the same call
        out = model(data.x, data.edge_index)

    Args:
        data: a PyG ``Data`` with ``edge_index`` or a sparse ``adj_t``, a ``HeteroData``, or
            the ``(train_data, val_data, test_data)`` triple of PyG's ``RandomLinkSplit`` on a
            ``Data`` (any ``split_labels``, ``add_negative_train_samples``,
            ``neg_sampling_ratio``, ``disjoint_train_ratio``; see
            :func:`~pyg_sar.partition.partition_graph`), or on a ``HeteroData``
            (``RandomLinkSplit(edge_types=..., rev_edge_types=...)``).
        num_parts: the number of parts; must equal the world size (default).
        method: ``"metis"``, ``"random"`` or ``"contiguous"``.
        seed: seed of METIS / the random assignment.
        balance: ``"nodes"``, ``"edges"`` (nodes and in-edges per part) or ``None`` (the
            default; see :func:`~pyg_sar.partition.partition_graph`).
        context: the :class:`~pyg_sar.distributed.context.DistContext` to use (default: that of
            :func:`pyg_sar.init`, made if needed); the part's graph is bound to it.
        timeout: seconds the other ranks wait for rank 0 to partition (default 3600).

    Returns:
        this rank's :class:`~pyg_sar.partition.PartitionData` (a
        :class:`~pyg_sar.partition.HeteroPartition` for a ``HeteroData``; for a link split
        the triple ``(train, val, test)`` of
        :func:`~pyg_sar.partition.link_split.load_link_split`: each split's
        ``edge_label_index`` (or, with ``split_labels=True``, ``pos_edge_label_index`` and
        ``neg_edge_label_index``) holds the pairs whose source this rank owns, in NEW global
        ids, with their labels and their positions in the input split (``*_ids``); for a
        heterogeneous split three :class:`~pyg_sar.partition.HeteroPartition` whose
        ``part[edge_type].edge_label_index`` etc. hold them in the new ids of the edge type's
        source and destination node types).

    Raises:
        ValueError: ``num_parts`` is not the world size or ``balance`` unknown, or rank 0
            found ``data`` invalid (on every rank, naming the problem).
        RuntimeError: partitioning, sending or loading failed on some rank (on every rank).
    """
    from pyg_sar.distributed.context import resolve_context
    from pyg_sar.partition.assign import check_balance_arg
    check_balance_arg(balance)  # on every rank, before any collective
    ctx = resolve_context(context)
    world, rank = ctx.world_size, ctx.rank
    if num_parts is None:
        num_parts = world
    if isinstance(num_parts, bool) or not isinstance(num_parts, (int, np.integer)) or \
            num_parts != world:
        raise ValueError(f"pyg_sar.distribute: num_parts must equal the world size {world} "
                         f"(got {num_parts!r}); each rank holds one part. To make another "
                         f"number of parts, use pyg_sar.partition_graph")
    wait = DEFAULT_PARTITION_TIMEOUT if timeout is None else float(timeout)
    comm = ctx.comm
    workdir = Path(tempfile.mkdtemp(prefix=f"pyg_sar_distribute_r{rank}_"))
    try:
        # 1. rank 0 partitions; every rank learns the outcome (and the file sizes).
        manifest, error, own = None, None, None
        if rank == 0:
            try:
                from pyg_sar.partition.api import partition_graph
                partition_graph(data, world, workdir / "parts", method=method, seed=seed,
                                balance=balance)
                root = workdir / "parts"
                manifest = [[[rel, (root / rel).stat().st_size] for rel in _part_files(root, r)]
                            for r in range(world)]
            except Exception as err:  # noqa: BLE001 - every rank must learn of it
                error, own = _describe(err), err
        status = comm.allgather_object({"error": error, "manifest": manifest}, timeout=wait)
        _raise_remote("partitioning", [s["error"] for s in status], rank, own)
        manifest = status[0]["manifest"]

        # 2. rank 0 sends every rank its files; each writes them into its own folder.
        error, own = None, None
        try:
            root = workdir / "parts" if rank == 0 else _receive(comm, manifest[rank], workdir)
            if rank == 0:
                _send_all(comm, workdir / "parts", manifest)
            if is_link_folder(root):
                part = load_link_split(root, rank, world_size=world, context=ctx)
            else:
                part = load_partition(root, rank, world_size=world, context=ctx)
        except Exception as err:  # noqa: BLE001
            error, own = _describe(err), err
        status = comm.allgather_object(error)
        _raise_remote("receiving or loading a part", status, rank, own)
        for p in part if isinstance(part, tuple) else (part,):
            p.path = None  # its folder is gone
        return part
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _send_all(comm: Any, root: Path, manifest: list) -> None:
    for r in range(1, len(manifest)):
        blob = b"".join((root / rel).read_bytes() for rel, _ in manifest[r])
        buffer = torch.frombuffer(bytearray(blob), dtype=torch.uint8) if blob else \
            torch.zeros(0, dtype=torch.uint8)
        works = [comm.isend(buffer[start:start + _CHUNK_BYTES], r, tag=_TAG + i)
                 for i, start in enumerate(range(0, max(len(blob), 1), _CHUNK_BYTES))]
        for work in works:  # one rank at a time: at most one part's bytes in flight
            work.wait()


def _receive(comm: Any, files: list, workdir: Path) -> Path:
    total = sum(size for _, size in files)
    buffer = torch.empty(total, dtype=torch.uint8)
    works = []
    for i, start in enumerate(range(0, max(total, 1), _CHUNK_BYTES)):
        works.append(comm.irecv(buffer[start:start + _CHUNK_BYTES], 0, tag=_TAG + i))
    for work in works:
        work.wait()
    blob = buffer.numpy().tobytes()
    root = workdir / "part"
    offset = 0
    for rel, size in files:  # meta.json comes last: a folder without it never loads
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise ValueError(f"pyg_sar.distribute: refusing file name {rel!r} from rank 0")
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(path, blob[offset:offset + size])
        offset += size
    return root
