"""The collective side of :func:`pyg_sar.link.negative_sampling`: the directory of original
ids (new id and in-degree of every node, spread over the ranks in blocks of original ids), the
edge-membership test at the destination's owner, and the request / reply exchanges they use.

Built once per graph (``graph.cached``); every method is collective (every rank calls it, in
the same order, also with nothing to ask).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Optional

import torch
from torch import Tensor

from pyg_sar.core.exchange import count

LABEL = "negative_sampling"


class DirectoryComm:
    """Per-graph state of the distributed negative sampler."""

    @staticmethod
    def of(graph: Any) -> DirectoryComm:
        return graph.cached("pyg_sar.link.negatives", lambda: DirectoryComm(graph))

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        world = graph.world_size
        ctx = graph.context if world > 1 else None
        self.comm = ctx.comm if ctx is not None else None
        self.rank, self.world = graph.rank, world
        self.offsets = list(graph.node_offsets)
        self.num_nodes = self.offsets[-1]
        self.device = graph.device
        n = graph.num_nodes
        new = torch.arange(n, dtype=torch.long, device=self.device) + self.offsets[self.rank]
        orig = new if graph.node_ids is None else graph.node_ids.to(self.device).long()
        indeg = sum(b.rowptr.to(self.device).long().diff() for b in graph.blocks)
        # block d of original ids: [N * d // P, N * (d + 1) // P)
        self.dbounds = [self.num_nodes * d // world for d in range(world + 1)]
        self._dupper = torch.tensor(self.dbounds[1:], dtype=torch.long, device=self.device)
        rows, _ = self.send(torch.searchsorted(self._dupper, orig, right=True),
                            torch.stack([orig, new, indeg], 1))
        rows = rows[torch.argsort(rows[:, 0])]
        lo, hi = self.dbounds[self.rank], self.dbounds[self.rank + 1]
        ok = torch.equal(rows[:, 0], torch.arange(lo, hi, dtype=torch.long,
                                                  device=self.device))
        self.agree("negative_sampling", None if ok else
                   f"negative_sampling: the graph's node_ids are not a permutation of "
                   f"[0, {self.num_nodes}) (original ids {lo}..{hi} arrive "
                   f"{rows.shape[0]} times)")
        self.new_of = rows[:, 1]
        self.cumulative = rows[:, 2].cumsum(0)
        total = int(self.cumulative[-1]) if rows.shape[0] else 0
        totals = [int(t) for t in self.comm.allgather_object(total)] if self.comm else [total]
        self.dprefix = [0]
        for t in totals:
            self.dprefix.append(self.dprefix[-1] + t)
        self._dpupper = torch.tensor(self.dprefix[1:], dtype=torch.long, device=self.device)
        self.num_edges = self.dprefix[-1]
        self._codes: Optional[Tensor] = None

    # ---- collectives ----------------------------------------------------------------------
    def agree(self, name: str, problem: Optional[str]) -> None:
        """Raise on every rank when any rank has a problem (one small all-reduce)."""
        if self.comm is not None:
            flag = torch.tensor([0 if problem is None else 1], dtype=torch.long)
            self.comm.all_reduce(flag, op="sum")
            if problem is None and int(flag[0]):
                raise ValueError(f"{name}: invalid input on another rank (that rank's error "
                                 f"names the value)")
        if problem is not None:
            raise ValueError(problem)

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
        """New ids of original ids (``kind="id"``) or of cumulative in-degree offsets
        (``kind="deg"``), answered by the directory ranks."""
        upper = self._dupper if kind == "id" else self._dpupper
        asked, reply = self.send(torch.searchsorted(upper, positions, right=True), positions)
        if kind == "id":
            local = asked - self.dbounds[self.rank]
        else:
            from pyg_sar.link.negatives import _locate
            local = _locate(self.cumulative, asked - self.dprefix[self.rank])
        return reply(self.new_of[local])

    def is_edge(self, src: Tensor, dst: Tensor) -> Tensor:
        """Whether each ``src -> dst`` (new ids) is a stored edge, answered by ``dst``'s
        owner."""
        codes = self._edge_codes()
        upper = torch.tensor(self.offsets[1:], dtype=torch.long, device=self.device)
        asked, reply = self.send(torch.searchsorted(upper, dst, right=True),
                                 torch.stack([src, dst], 1))
        q = (asked[:, 1] - self.offsets[self.rank]) * self.num_nodes + asked[:, 0]
        if codes.numel():
            at = torch.searchsorted(codes, q).clamp_(max=codes.numel() - 1)
            hit = (codes[at] == q).long()
        else:
            hit = torch.zeros_like(q)
        return reply(hit).bool()

    def _edge_codes(self) -> Tensor:
        """Sorted ``local dst * N + new src id`` of the rank's stored edges (built on first
        use: one all-to-all gives the new ids of the rows received from other ranks)."""
        if self._codes is not None:
            return self._codes
        g, rank = self.graph, self.rank
        recv_new = torch.zeros(0, dtype=torch.long, device=self.device)
        if self.comm is not None:
            sends = torch.cat([i.to(self.device).long() for i in g.send_idx]) + \
                self.offsets[rank]
            recv_new = sends.new_empty(sum(g.recv_counts))
            self.comm.all_to_all_single(recv_new, sends, g.recv_counts, g.send_counts)
            count(self.comm, 8 * sum(g.send_counts), 8 * sum(g.recv_counts), 0,
                  traffic=(LABEL, "rows"))
        parts, start = [], 0
        for block in g.blocks:
            if block.src_rank == rank:
                src = block.col.to(self.device) + self.offsets[rank]
            else:
                src = recv_new[start + block.col.to(self.device)]
                start += block.num_src
            parts.append(block.row.to(self.device) * self.num_nodes + src)
        self._codes = torch.unique(torch.cat(parts)) if parts else recv_new
        return self._codes
