"""The collective side of :func:`pyg_sar.link.negative_sampling`: the directory of original
ids (new id and in-degree of every node, spread over the ranks in blocks of original ids), the
edge-membership test at the destination's owner, and the request / reply exchanges they use.

Built once per graph (``graph.cached``); every method is collective (every rank calls it, in
the same order, also with nothing to ask). For a bipartite graph (one edge type between two
node types) a second directory, of the source type's original ids, answers the source draws
(lookup kind ``"src"``); edges are keyed by ``local dst * N_src + new src id``.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Optional

import torch
from torch import Tensor

from pyg_sar.core.exchange import count
from pyg_sar.distributed.collectives import refuse_together

LABEL = "negative_sampling"


class DirectoryComm:
    """Per-graph state of the distributed negative sampler."""

    @staticmethod
    def of(graph: Any, src_node_ids: Optional[Tensor] = None) -> DirectoryComm:
        """The graph's sampler state (built on first use); ``src_node_ids``: the original ids
        of the rank's source rows of a bipartite graph (its source type's ``node_ids``)."""
        if src_node_ids is None:
            return graph.cached("pyg_sar.link.negatives", lambda: DirectoryComm(graph))
        return graph.cached("pyg_sar.link.negatives.bipartite",
                            lambda: DirectoryComm(graph, src_node_ids))

    def __init__(self, graph: Any, src_node_ids: Optional[Tensor] = None) -> None:
        self.graph = graph
        world = graph.world_size
        ctx = graph.context if world > 1 else None
        self.comm = ctx.comm if ctx is not None else None
        self.rank, self.world = graph.rank, world
        self.offsets = list(graph.node_offsets)
        self.num_nodes = self.offsets[-1]
        self.src_offsets = list(getattr(graph, "source_offsets", self.offsets))
        self.num_src = self.src_offsets[-1]
        self.device = graph.device
        n = graph.num_nodes
        new = torch.arange(n, dtype=torch.long, device=self.device) + self.offsets[self.rank]
        orig = new if graph.node_ids is None else graph.node_ids.to(self.device).long()
        indeg = sum(b.rowptr.to(self.device).long().diff() for b in graph.blocks)
        self.dbounds, self._dupper, self.new_of, indeg = self._directory(
            orig, new, indeg, self.num_nodes, "the graph's node_ids")
        self.cumulative = indeg.cumsum(0)
        self.src_directory = None
        if src_node_ids is not None:  # a bipartite graph: the source type's directory
            lo = self.src_offsets[self.rank]
            src_new = torch.arange(lo, self.src_offsets[self.rank + 1], dtype=torch.long,
                                   device=self.device)
            ok = tuple(src_node_ids.shape) == tuple(src_new.shape)
            self.agree("negative_sampling", None if ok else
                       f"negative_sampling: {src_node_ids.numel()} source node ids for the "
                       f"{src_new.numel()} source rows of rank {self.rank}")
            self.src_directory = self._directory(
                src_node_ids.to(self.device).long(), src_new, torch.zeros_like(src_new),
                self.num_src, "the source type's node_ids")[:3]
        total = int(self.cumulative[-1]) if self.cumulative.numel() else 0
        totals = [int(t) for t in self.comm.allgather_object(total)] if self.comm else [total]
        self.dprefix = [0]
        for t in totals:
            self.dprefix.append(self.dprefix[-1] + t)
        self._dpupper = torch.tensor(self.dprefix[1:], dtype=torch.long, device=self.device)
        self.num_edges = self.dprefix[-1]
        self._codes: Optional[Tensor] = None

    def _directory(self, orig: Tensor, new: Tensor, value: Tensor, num_nodes: int,
                   what: str) -> tuple[list[int], Tensor, Tensor, Tensor]:
        """The directory of one node set (collective): ``(bounds, upper bounds tensor, new id
        of every original id in this rank's block, value of each)``; rank ``d`` answers for
        the original ids ``[N * d // P, N * (d + 1) // P)``."""
        world = self.world
        bounds = [num_nodes * d // world for d in range(world + 1)]
        upper = torch.tensor(bounds[1:], dtype=torch.long, device=self.device)
        rows, _ = self.send(torch.searchsorted(upper, orig, right=True),
                            torch.stack([orig, new, value], 1))
        rows = rows[torch.argsort(rows[:, 0])]
        lo, hi = bounds[self.rank], bounds[self.rank + 1]
        ok = torch.equal(rows[:, 0], torch.arange(lo, hi, dtype=torch.long,
                                                  device=self.device))
        self.agree("negative_sampling", None if ok else
                   f"negative_sampling: {what} are not a permutation of [0, {num_nodes}) "
                   f"(original ids {lo}..{hi} arrive {rows.shape[0]} times)")
        return bounds, upper, rows[:, 1], rows[:, 2]

    # ---- collectives ----------------------------------------------------------------------
    def agree(self, name: str, problem: Optional[str]) -> None:
        """Raise on every rank when any rank has a problem (one small all-reduce)."""
        refuse_together(self.comm, name, problem)

    def any_left(self, n: int) -> bool:
        if self.comm is None:
            return n > 0
        t = torch.tensor([n], dtype=torch.long)
        self.comm.all_reduce(t, op="sum")
        return int(t[0]) > 0

    def send(self, dest: Tensor, payload: Tensor) -> tuple[Tensor, Callable[[Tensor], Tensor]]:
        """Rows of ``payload`` to rank ``dest``: ``(rows received, reply)``; ``reply(answers)``
        (one answer row per received row) returns the answers to the askers, in the order of
        ``payload`` (both collective)."""
        if self.comm is None:
            return payload, lambda answers: answers
        comm, world, rank = self.comm, self.world, self.rank
        order = torch.argsort(dest, stable=True)
        counts = torch.bincount(dest, minlength=world).cpu()
        got = torch.empty_like(counts)
        comm.all_to_all_single(got, counts, [1] * world, [1] * world)
        send, recv = counts.tolist(), got.tolist()
        received = payload.new_empty((sum(recv), *payload.shape[1:]))
        comm.all_to_all_single(received, payload[order].contiguous(), recv, send)
        row = payload.element_size() * math.prod(payload.shape[1:])
        count(comm, 8 * (world - 1) + row * (sum(send) - send[rank]),
              8 * (world - 1) + row * (sum(recv) - recv[rank]), 0, traffic=(LABEL, "rows"))

        def reply(answers: Tensor) -> Tensor:
            back = answers.new_empty((sum(send), *answers.shape[1:]))
            comm.all_to_all_single(back, answers.contiguous(), send, recv)
            width = answers.element_size() * math.prod(answers.shape[1:])
            count(comm, width * (sum(recv) - recv[rank]), width * (sum(send) - send[rank]),
                  0, traffic=(LABEL, "rows"))
            out = torch.empty_like(back)
            out[order] = back
            return out
        return received, reply

    # ---- the sampler's hooks ----------------------------------------------------------------
    def lookup(self, positions: Tensor, kind: str) -> Tensor:
        """New ids of original ids (``kind="id"``; ``"src"``: of the source type of a
        bipartite graph) or of cumulative in-degree offsets (``kind="deg"``), answered by the
        directory ranks."""
        if kind == "src" and self.src_directory is not None:
            bounds, upper, new_of = self.src_directory
            asked, reply = self.send(torch.searchsorted(upper, positions, right=True),
                                     positions)
            return reply(new_of[asked - bounds[self.rank]])
        upper = self._dpupper if kind == "deg" else self._dupper
        asked, reply = self.send(torch.searchsorted(upper, positions, right=True), positions)
        if kind != "deg":
            local = asked - self.dbounds[self.rank]
        else:
            # the node whose in-edge range holds each offset (cumulative is inclusive)
            local = torch.searchsorted(self.cumulative, asked - self.dprefix[self.rank],
                                       right=True)
        return reply(self.new_of[local])

    def is_edge(self, src: Tensor, dst: Tensor) -> Tensor:
        """Whether each ``src -> dst`` (new ids) is a stored edge, answered by ``dst``'s
        owner."""
        codes = self._edge_codes()
        upper = torch.tensor(self.offsets[1:], dtype=torch.long, device=self.device)
        asked, reply = self.send(torch.searchsorted(upper, dst, right=True),
                                 torch.stack([src, dst], 1))
        q = (asked[:, 1] - self.offsets[self.rank]) * self.num_src + asked[:, 0]
        if codes.numel():
            at = torch.searchsorted(codes, q).clamp_(max=codes.numel() - 1)
            hit = (codes[at] == q).long()
        else:
            hit = torch.zeros_like(q)
        return reply(hit).bool()

    def _edge_codes(self) -> Tensor:
        """Sorted ``local dst * N_src + new src id`` of the rank's stored edges (built on first
        use: one all-to-all gives the new ids of the rows received from other ranks)."""
        if self._codes is not None:
            return self._codes
        g, rank = self.graph, self.rank
        recv_new = torch.zeros(0, dtype=torch.long, device=self.device)
        if self.comm is not None:
            sends = torch.cat([i.to(self.device).long() for i in g.send_idx]) + \
                self.src_offsets[rank]
            recv_new = sends.new_empty(sum(g.recv_counts))
            self.comm.all_to_all_single(recv_new, sends, g.recv_counts, g.send_counts)
            count(self.comm, 8 * sum(g.send_counts), 8 * sum(g.recv_counts), 0,
                  traffic=(LABEL, "rows"))
        parts, start = [], 0
        for block in g.blocks:
            if block.src_rank == rank:
                src = block.col.to(self.device) + self.src_offsets[rank]
            else:
                src = recv_new[start + block.col.to(self.device)]
                start += block.num_src
            parts.append(block.row.to(self.device) * self.num_src + src)
        self._codes = torch.unique(torch.cat(parts)) if parts else recv_new
        return self._codes
