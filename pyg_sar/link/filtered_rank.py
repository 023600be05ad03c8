r"""Filtered ranking of knowledge-graph triples against every node of the graph, over all ranks.

PyG's ``rgcn_link_pred.py`` evaluates with ``compute_mrr(z, edge_index, edge_type)``: each
triple ``(s, r, d)`` is scored against every tail ``(s, r, t)`` and every head ``(h, r, d)`` of
the whole graph, the candidates that are known triples (any of the data's pair sets: train,
valid, test) removed, and its rank is the mean of the optimistic and the pessimistic one;
the metric is the mean reciprocal rank. On a partition the rows of ``z`` are spread over the
ranks, so :class:`FilteredMRR` walks the ranks' blocks of rows (each rank's block, with the
codes of its known triples, broadcast in turn: one block in memory at a time), scores each
of the rank's triples against the block with the model's decoder, and counts the candidates
above the triple's score. The ranks' reciprocal ranks are summed at the end: the result is
the single-process script's, for any number of ranks.

Bound in one line of the script, after its own ``def compute_mrr``::

    compute_mrr = pyg_sar.link.FilteredMRR(model.decoder, data)
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from pyg_sar.link.metrics import _agree

__all__ = ["FilteredMRR"]

# Elements of one decoder call's row tensors (candidate pairs x row width): bounds the
# decoder's temporaries (2**23 float32 numbers: 32 MiB per tensor).
_ELEMENTS_PER_CALL = 1 << 23


def _plain(t: Tensor) -> Tensor:
    return t.as_subclass(Tensor)


def _pair_sets(data: Any) -> list[tuple[str, Tensor, Tensor]]:
    """``(name, pairs, types)`` of every pair set ``<name>_edge_index`` with its
    ``<name>_edge_type`` on ``data`` (new global ids, this rank's share)."""
    out = []
    for key in sorted(data.keys()):
        if not key.endswith("_edge_index") or key == "edge_index":
            continue
        name = key[: -len("_edge_index")]
        types = getattr(data, f"{name}_edge_type", None)
        if isinstance(types, Tensor):
            out.append((name, _plain(data[key]).long(), _plain(types).long()))
    return out


class FilteredMRR:
    """The filtered mean reciprocal rank of PyG's ``rgcn_link_pred.py``, over all ranks.

    Args:
        decoder: ``decoder(z, edge_index, edge_type) -> [n]`` scores of the pairs
            ``edge_index`` (plain indices into the rows ``z``), e.g. the ``DistMultDecoder``
            of PyG's script: ``model.decoder`` of its ``GAE``.
        data: the rank's :class:`~pyg_sar.PartitionData` from :func:`pyg_sar.distribute` of
            a ``Data`` with pair sets (``train_edge_index`` / ``train_edge_type``,
            ``valid_*``, ``test_*``): its graph and the known triples to filter.

    Calling it, ``mrr(z, edge_index, edge_type)`` (``z`` the rank's node rows,
    ``edge_index`` / ``edge_type`` a pair set of ``data``) returns a float32 scalar tensor,
    the same on every rank. Collective: every rank calls it with its share. A plain tensor
    as ``edge_index`` is refused on every rank: it may hold original ids.
    """

    def __init__(self, decoder: Callable[..., Tensor], data: Any) -> None:
        graph = getattr(data, "edge_index", None)
        if not hasattr(graph, "node_offsets") or not hasattr(graph, "blocks"):
            raise ValueError(f"FilteredMRR: data must be a partition from pyg_sar.distribute "
                             f"(its edge_index a DistGraph; got {type(graph).__name__})")
        sets = _pair_sets(data)
        if not sets:
            raise ValueError("FilteredMRR: data has no pair sets with relation types "
                             "(<name>_edge_index with <name>_edge_type, e.g. "
                             "train_edge_index / train_edge_type)")
        self.decoder, self.graph = decoder, graph
        self.offsets = [int(o) for o in graph.node_offsets]
        self.rank, self.world = graph.rank, graph.world_size
        from pyg_sar.distributed.context import communicator_of
        self.comm = communicator_of(graph)
        lo, hi = self.offsets[self.rank], self.offsets[self.rank + 1]
        heads = torch.cat([p[0] for _, p, _ in sets])
        tails = torch.cat([p[1] for _, p, _ in sets])
        types = torch.cat([t for _, _, t in sets])
        outside = (heads < lo) | (heads >= hi)
        problem = None if not bool(outside.any()) else (
            f"FilteredMRR: rank {self.rank} holds a triple whose head {int(heads[outside][0])} "
            f"it does not own ([{lo}, {hi})): pair sets must be split by source owner, as "
            f"pyg_sar.distribute splits them")
        _agree(self.comm, "FilteredMRR", problem, heads.device)
        self.num_relations = int(self._max(int(types.max()) + 1 if types.numel() else 0))
        n = self.offsets[-1]
        if n * n * max(self.num_relations, 1) >= 2 ** 62:
            raise ValueError(f"FilteredMRR: {n} nodes x {self.num_relations} relations "
                             f"overflow the int64 triple codes")
        self.codes = torch.sort(self._code(heads, types, tails)).values
        self.code_counts = (self.comm.allgather_object(int(self.codes.numel()))
                            if self.comm is not None else [int(self.codes.numel())])

    # ---- collectives ----------------------------------------------------------------------
    def _max(self, value: int) -> int:
        t = torch.tensor([value], dtype=torch.long)
        if self.comm is not None:
            self.comm.all_reduce(t, op="max")
        return int(t[0])

    def _block(self, b: int, z: Tensor) -> tuple[Tensor, Tensor]:
        """Rank ``b``'s rows of ``z`` and codes of its known triples, on every rank."""
        if self.comm is None:
            return z, self.codes
        rows = self.offsets[b + 1] - self.offsets[b]
        block = z if b == self.rank else z.new_empty((rows, *z.shape[1:]))
        codes = (self.codes if b == self.rank
                 else self.codes.new_empty(self.code_counts[b]))
        self.comm.broadcast(block, src=b)
        self.comm.broadcast(codes, src=b)
        return block, codes

    def _code(self, heads: Tensor, types: Tensor, tails: Tensor) -> Tensor:
        return (heads * self.num_relations + types) * self.offsets[-1] + tails

    # ---- the metric -----------------------------------------------------------------------
    @torch.no_grad()
    def __call__(self, z: Tensor, edge_index: Tensor, edge_type: Tensor) -> Tensor:
        from pyg_sar.link.gather import gather
        pairs, types = _plain(edge_index).long(), _plain(edge_type).long()
        z = _plain(z).detach()
        n = pairs.shape[1] if pairs.dim() == 2 else -1
        lo, hi = self.offsets[self.rank], self.offsets[self.rank + 1]
        problem = None
        if getattr(edge_index, "_sar_graph", None) is None:
            # a plain tensor may hold original ids (every PyG split does): never guess
            problem = (f"FilteredMRR: edge_index must be a pair set of data (PairIds in the "
                       f"partition's new ids, e.g. data.valid_edge_index; got "
                       f"{type(edge_index).__name__}): map original ids with "
                       f"pyg_sar.link.to_new_ids and keep the pairs of pyg_sar.distribute")
        elif pairs.dim() != 2 or pairs.shape[0] != 2 or types.shape != (n,):
            problem = (f"FilteredMRR: edge_index must be [2, n] with edge_type [n] (got "
                       f"{tuple(pairs.shape)} and {tuple(types.shape)})")
        elif z.shape[0] != hi - lo:
            problem = (f"FilteredMRR: z has {z.shape[0]} rows, rank {self.rank} owns "
                       f"{hi - lo} nodes: pass the model's output on the rank's rows")
        elif n and bool(((pairs[0] < lo) | (pairs[0] >= hi)).any()):
            problem = (f"FilteredMRR: rank {self.rank} ranks triples whose head it does not "
                       f"own: pass a pair set of data (split by source owner)")
        _agree(self.comm, "FilteredMRR", problem, z.device)
        src, dst = pairs[0], pairs[1]
        ends = gather(z, pairs.reshape(-1), ids="new", graph=self.graph)
        rs, rd = _plain(ends[:n]), _plain(ends[n:])
        arange = torch.arange(n, device=z.device)
        true = self.decoder(torch.cat([rs, rd]), torch.stack([arange, n + arange]), types)
        width = max(1, math.prod(z.shape[1:]))  # numbers per row
        above = torch.zeros(2, n, dtype=torch.long, device=z.device)   # score > true
        at_least = torch.zeros(2, n, dtype=torch.long, device=z.device)  # score >= true
        for b in range(self.world):
            block, known = self._block(b, z)
            ids = torch.arange(self.offsets[b], self.offsets[b + 1], device=z.device)
            step = max(1, _ELEMENTS_PER_CALL // width // max(ids.numel(), 1))
            for start in range(0, n, step):
                q = arange[start:start + step]
                self._count(0, q, rs, block, ids, types, true, self.codes,
                            self._code(src[q, None], types[q, None], ids[None, :]),
                            ids[None, :] != dst[q, None], above, at_least)
                self._count(1, q, rd, block, ids, types, true, known,
                            self._code(ids[None, :], types[q, None], dst[q, None]),
                            ids[None, :] != src[q, None], above, at_least)
        ranks = 0.5 * ((above + 1) + (at_least + 1)).double()
        totals = torch.tensor([float((1.0 / ranks).sum()), 2.0 * n], dtype=torch.float64)
        if self.comm is not None:
            self.comm.all_reduce(totals, op="sum")
        return (totals[0] / totals[1]).float() if totals[1] > 0 else torch.tensor(float("nan"))

    def _count(self, side: int, q: Tensor, fixed: Tensor, block: Tensor, ids: Tensor,
               types: Tensor, true: Tensor, known: Tensor, codes: Tensor, not_true: Tensor,
               above: Tensor, at_least: Tensor) -> None:
        """Score queries ``q`` against the block's nodes as tails (``side`` 0: the query's
        head fixed) or heads (1: its tail fixed), and count the unfiltered candidates."""
        m, k = q.numel(), ids.numel()
        if m == 0 or k == 0:
            return
        local = torch.arange(k, device=block.device)
        query = torch.arange(m, device=block.device).repeat_interleave(k)
        if side == 0:
            rows, index = torch.cat([fixed[q], block]), torch.stack([query, m + local.repeat(m)])
        else:
            rows, index = torch.cat([block, fixed[q]]), torch.stack([local.repeat(m), k + query])
        scores = self.decoder(rows, index, types[q].repeat_interleave(k)).view(m, k)
        keep = not_true & ~torch.isin(codes, known)
        t = true[q, None]
        above[side, q] += ((scores > t) & keep).sum(1)
        at_least[side, q] += ((scores >= t) & keep).sum(1)
