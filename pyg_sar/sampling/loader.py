r"""Minibatch loaders that yield exactly what PyG's ``NeighborLoader`` yields, sampled in bulk.

.. code-block:: python

    loader = BulkNeighborLoader(data, num_neighbors=[15, 10, 5], batch_size=1024, bulk=16,
                                shuffle=True, seed=0, input_nodes=data.train_mask)
    for batch in loader:                       # a torch_geometric.data.Data per minibatch
        out = model(batch.x, batch.edge_index)[:batch.batch_size]
        loss = F.cross_entropy(out, batch.y[:batch.batch_size])

Every minibatch has ``x``, ``y`` (and every other node / edge attribute of ``data``, indexed by
``n_id`` / ``e_id``), ``edge_index`` (local ids: row 0 source, row 1 destination), ``n_id``,
``e_id``, ``input_id``, ``batch_size``, ``num_sampled_nodes`` and ``num_sampled_edges`` (so
``torch_geometric.utils.trim_to_layer`` works). ``bulk`` minibatches are sampled per call.

Given a :class:`~pyg_sar.partition.LocalPartition` instead of a ``Data``, the loader runs on
every rank of a job (see :mod:`pyg_sar.sampling.distributed`): rank ``r`` of ``P`` yields
minibatches ``r, r + P, ...`` of the epoch's global list, adjacency rows are computed by the
ranks that own them, and the features of a bulk are fetched with one all-to-all.

The same ``seed`` gives the same minibatches for any ``bulk`` and any number of ranks; the
epoch (see :meth:`set_epoch`; it advances by one after each full pass) reshuffles them.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Optional

import torch
from torch import Tensor

from pyg_sar.sampling import schedule
from pyg_sar.sampling.buffers import BufferRing
from pyg_sar.sampling.bulk import BulkSample, sample_bulk
from pyg_sar.sampling.graph import SamplingGraph, hetero_message
from pyg_sar.sampling.rows import LocalRows


def _is_partition(obj: Any) -> bool:
    return hasattr(obj, "graph") and hasattr(obj, "node_ids") and hasattr(obj, "meta")


class _LocalData:
    """A whole PyG ``Data`` in this process."""

    def __init__(self, data, input_nodes, backend: str) -> None:
        from torch_geometric.data import Data, HeteroData

        from pyg_sar.partition.hetero import HeteroPartition
        if isinstance(data, (HeteroData, HeteroPartition)):
            raise ValueError(hetero_message(f"BulkNeighborLoader: the {type(data).__name__}"))
        if not isinstance(data, Data):
            raise TypeError(f"BulkNeighborLoader: expected a torch_geometric.data.Data or a "
                            f"pyg_sar LocalPartition (got {type(data).__name__})")
        if data.edge_index is None:
            raise ValueError("BulkNeighborLoader: data has no edge_index")
        self.data = data
        n = int(data.num_nodes)
        self.graph = SamplingGraph.from_edge_index(data.edge_index, n)
        self.rows = LocalRows(self.graph, backend)
        self.seeds = _seed_list(input_nodes, n, "data")
        self.rank, self.world_size = 0, 1
        self.node_keys = [k for k in data.keys() if k != "edge_index" and data.is_node_attr(k)]
        self.edge_keys = [k for k in data.keys() if k != "edge_index" and data.is_edge_attr(k)]
        self.buffers = BufferRing()

    def fetch(self, sample: BulkSample) -> None:
        return None

    def fields(self, sample: BulkSample, b: int, fetched) -> dict:
        mb = sample.minibatch(b)
        out = {}
        for key in self.node_keys:
            value = self.data[key]
            out[key] = self.buffers.gather(key, value, mb["n_id"]) if torch.is_tensor(value) \
                else value
        for key in self.edge_keys:
            value = self.data[key]
            out[key] = value.index_select(0, mb["e_id"]) if torch.is_tensor(value) else value
        return out


def _seed_list(input_nodes, num_nodes: int, what: str) -> Tensor:
    if input_nodes is None:
        return torch.arange(num_nodes)
    if not torch.is_tensor(input_nodes):
        input_nodes = torch.as_tensor(input_nodes)
    if input_nodes.dtype == torch.bool:
        if input_nodes.numel() != num_nodes:
            raise ValueError(f"BulkNeighborLoader: input_nodes mask has {input_nodes.numel()} "
                             f"entries, {what} has {num_nodes} nodes")
        return input_nodes.nonzero().view(-1)
    ids = input_nodes.to(torch.int64).view(-1)
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= num_nodes):
        raise ValueError(f"BulkNeighborLoader: input_nodes must lie in [0, {num_nodes}) "
                         f"(got min {int(ids.min())}, max {int(ids.max())})")
    return ids


class BulkNeighborLoader:
    r"""GraphSAGE minibatches (node-wise sampling), ``bulk`` per sampler call.

    Args:
        data: a ``torch_geometric.data.Data`` (one process), or this rank's
            :class:`~pyg_sar.partition.LocalPartition` (every rank of a job).
        num_neighbors: fanout per hop (``-1``: every neighbour).
        batch_size: seed nodes per minibatch.
        bulk: minibatches sampled per call (``k``).
        shuffle: reshuffle the seed nodes every epoch.
        seed: the random seed; with the epoch and the minibatch index it fixes every pick.
        input_nodes: seed nodes: ``None`` (all nodes), a bool mask (over ``data``'s nodes, or
            over the rank's local nodes for a partition), or original node ids.
        drop_last: drop the last, incomplete minibatch.
        progress: show a tqdm progress bar over each epoch (rank 0 only).
        replicate_graph: (partition) hold the whole graph's structure on every rank, so
            sampling needs no communication.
        replication: (partition) 1 for a 1D row partition of the adjacency; 2 for the 1.5D
            layout where each pair of ranks holds both of its parts (the world size must be
            even).
        backend: operator backend (``"auto"``, ``"native"``, ``"reference"``).
        context: the :class:`~pyg_sar.DistContext` (partition only; default: ``pyg_sar.init()``).
    """

    method = "sage"

    def __init__(self, data, num_neighbors: Sequence[int] = (15, 10, 5),
                 batch_size: int = 1024, bulk: int = 16, shuffle: bool = True, seed: int = 0,
                 input_nodes=None, drop_last: bool = False, progress: bool = False,
                 replicate_graph: bool = False, replication: int = 1, backend: str = "auto",
                 context=None) -> None:
        sizes = [int(s) for s in num_neighbors]
        self._init(data, sizes, batch_size, bulk, shuffle, seed, input_nodes, drop_last,
                   progress, replicate_graph, replication, backend, context)

    def _init(self, data, sizes, batch_size, bulk, shuffle, seed, input_nodes, drop_last,
              progress, replicate_graph, replication, backend, context) -> None:
        if not sizes:
            raise ValueError(f"{type(self).__name__}: need at least one hop (got {sizes})")
        if batch_size < 1:
            raise ValueError(f"{type(self).__name__}: batch_size must be >= 1 "
                             f"(got {batch_size})")
        if bulk < 1:
            raise ValueError(f"{type(self).__name__}: bulk must be >= 1 (got {bulk})")
        self.sizes = sizes
        self.batch_size = int(batch_size)
        self.bulk = int(bulk)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.progress = bool(progress)
        self.backend = backend
        self.epoch = 0
        if _is_partition(data):
            from pyg_sar.sampling.distributed import DistributedSource
            self.source = DistributedSource(data, input_nodes, backend, context,
                                            replicate_graph=replicate_graph,
                                            replication=replication)
        else:
            if replicate_graph or replication != 1:
                raise ValueError(f"{type(self).__name__}: replicate_graph and replication "
                                 f"apply to a partition, not to a whole Data")
            self.source = _LocalData(data, input_nodes, backend)

    # ---------------------------------------------------------------- schedule
    @property
    def num_seeds(self) -> int:
        """Seed nodes over all ranks."""
        return int(self.source.seeds.numel())

    @property
    def num_global_batches(self) -> int:
        return schedule.num_batches(self.num_seeds, self.batch_size, self.drop_last)

    @property
    def steps_per_epoch(self) -> int:
        """Minibatches of the rank with the most (every rank loops this many times when it
        pads its last step; see :mod:`pyg_sar.sampling.train_loop`)."""
        return -(-self.num_global_batches // self.source.world_size)

    def __len__(self) -> int:
        g, p, r = self.num_global_batches, self.source.world_size, self.source.rank
        return len(range(r, g, p))

    def set_epoch(self, epoch: int) -> None:
        """Sample epoch ``epoch`` next (its shuffle and keys)."""
        self.epoch = int(epoch)

    def _slots(self, epoch: int) -> list[Optional[tuple[int, Tensor]]]:
        """This rank's minibatches (global index, seed ids), padded with ``None`` to
        :attr:`steps_per_epoch` so every rank makes the same collective calls."""
        batches = schedule.epoch_batches(self.num_seeds, self.batch_size, self.shuffle,
                                         self.seed, epoch, self.drop_last)
        p, r = self.source.world_size, self.source.rank
        mine: list = [(b, batches[b]) for b in range(r, len(batches), p)]
        return mine + [None] * (self.steps_per_epoch - len(mine))

    def sample(self, indices: Sequence[int], epoch: Optional[int] = None) -> BulkSample:
        """Samples the global minibatches ``indices`` of ``epoch`` (default: the current one)
        in one bulk call, on this rank alone (only for a whole Data or a replicated graph)."""
        epoch = self.epoch if epoch is None else int(epoch)
        batches = schedule.epoch_batches(self.num_seeds, self.batch_size, self.shuffle,
                                         self.seed, epoch, self.drop_last)
        seeds = [self.source.seeds[batches[b]] for b in indices]
        keys = [schedule.batch_key(self.seed, epoch, b) for b in indices]
        return sample_bulk(self.source.rows, seeds, keys, self.sizes, self.method,
                           backend=self.backend)

    # --------------------------------------------------------------- iteration
    def __iter__(self) -> Iterator:
        from torch_geometric.data import Data
        epoch = self.epoch
        slots = self._slots(epoch)
        bar = None
        if self.progress and self.source.rank == 0:
            from tqdm import tqdm  # a dependency of torch_geometric
            bar = tqdm(total=sum(s is not None for s in slots), desc=f"epoch {epoch}",
                       unit="batch")
        try:
            for start in range(0, len(slots), self.bulk):
                chunk = slots[start:start + self.bulk]
                real = [s for s in chunk if s is not None]
                seeds = [self.source.seeds[pos] for _, pos in real]
                keys = [schedule.batch_key(self.seed, epoch, b) for b, _ in real]
                sample = sample_bulk(self.source.rows, seeds, keys, self.sizes, self.method,
                                     backend=self.backend)
                fetched = self.source.fetch(sample)
                for i, (_, pos) in enumerate(real):
                    mb = sample.minibatch(i)
                    data = Data(edge_index=mb["edge_index"],
                                **self.source.fields(sample, i, fetched))
                    data.n_id = mb["n_id"]
                    data.e_id = mb["e_id"]
                    data.input_id = pos
                    data.batch_size = mb["batch_size"]
                    data.num_sampled_nodes = mb["num_sampled_nodes"]
                    data.num_sampled_edges = mb["num_sampled_edges"]
                    if bar is not None:
                        bar.update(1)
                    yield data
        finally:
            if bar is not None:
                bar.close()
        self.epoch = epoch + 1

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(sizes={self.sizes}, batch_size={self.batch_size}, "
                f"bulk={self.bulk}, seeds={self.num_seeds}, world_size={self.source.world_size})")


class BulkLadiesLoader(BulkNeighborLoader):
    r"""LADIES minibatches (layer-wise importance sampling), ``bulk`` per sampler call.

    Hop ``h`` samples ``layer_sizes[h]`` distinct nodes per minibatch with probability
    proportional to the sum, over the minibatch's frontier, of the squared row-normalised
    adjacency (``1 / in-degree``) and keeps every edge from them into the frontier. The
    output has :class:`BulkNeighborLoader`'s (and ``NeighborLoader``'s) layout. Other
    arguments as for :class:`BulkNeighborLoader`.
    """

    method = "ladies"

    def __init__(self, data, layer_sizes: Sequence[int] = (512, 512, 512),
                 batch_size: int = 1024, bulk: int = 16, shuffle: bool = True, seed: int = 0,
                 input_nodes=None, drop_last: bool = False, progress: bool = False,
                 replicate_graph: bool = False, replication: int = 1, backend: str = "auto",
                 context=None) -> None:
        sizes = [int(s) for s in layer_sizes]
        if any(s < 0 for s in sizes):
            raise ValueError(f"BulkLadiesLoader: layer_sizes must be >= 0 (got {sizes})")
        self._init(data, sizes, batch_size, bulk, shuffle, seed, input_nodes, drop_last,
                   progress, replicate_graph, replication, backend, context)
