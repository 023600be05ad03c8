r"""Top-k recommendation when the items are spread over the ranks.

:func:`topk_items` scores this rank's users against the items of ALL ranks, ``user_emb @
item_emb_global.T``, without ever holding that matrix: the item blocks travel around a ring
(rank ``r`` sends the block it holds to rank ``r + 1`` and receives from ``r - 1``, ``P - 1``
steps, the next block in flight while the current one is scored) and each user keeps a running
top-k, merged block by block. Ties are broken by the lower global item id, so the result is
the single-process one for every number of ranks.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional, Union

import torch
from torch import Tensor

from pyg_sar.distributed.context import communicator_of as _comm
from pyg_sar.link.gather import row_offsets
from pyg_sar.link.metrics import _agree, _check_k

# Score at most this many (user, item) entries at once: bounds the scratch memory.
_CHUNK_ENTRIES = 1 << 24
_TAG = 7307


def _merge(best: tuple[Tensor, Tensor], scores: Tensor, ids: Tensor, k: int
           ) -> tuple[Tensor, Tensor]:
    """The top ``k`` of the running best and the candidates (``scores``, ``ids`` ``[n, c]``),
    by score descending, then id ascending (two stable sorts)."""
    s = torch.cat([best[0], scores], dim=1)
    i = torch.cat([best[1], ids], dim=1)
    order = i.sort(dim=1, stable=True).indices
    s, i = s.gather(1, order), i.gather(1, order)
    order = s.sort(dim=1, descending=True, stable=True).indices[:, :k]
    return s.gather(1, order), i.gather(1, order)


def _score_block(best: tuple[Tensor, Tensor], users: Tensor, block: Tensor, start: int,
                 k: int, excluded: Optional[tuple[Tensor, Tensor]]) -> tuple[Tensor, Tensor]:
    """Merge the items ``[start, start + len(block))`` into the running best, a chunk of
    items at a time."""
    chunk = max(1, _CHUNK_ENTRIES // max(1, users.shape[0]))
    for lo in range(0, block.shape[0], chunk):
        part = block[lo:lo + chunk]
        scores = users @ part.T
        first = start + lo
        if excluded is not None:
            u, it = excluded
            here = (it >= first) & (it < first + part.shape[0])
            scores[u[here], it[here] - first] = float("-inf")
        values, cols = _chunk_topk(scores, min(k, part.shape[0]))
        best = _merge(best, values, cols + first, k)
    return best


def _chunk_topk(scores: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """The ``k`` best columns of each row by (score descending, column ascending), without
    sorting the rows: ``torch.topk`` finds the k-th score ``t``; every column above ``t``
    and the first columns equal to ``t`` (as many as are missing) are taken. Only the rows
    whose (k+1)-th score also equals ``t`` (more tied columns than fit) take the slow path."""
    if scores.shape[1] == k:
        top = scores.sort(dim=1, descending=True, stable=True)
        return top.values, top.indices
    values, cols = scores.topk(k + 1, dim=1)  # the (k+1)-th tells whether t is crowded
    crowded = (values[:, k] == values[:, k - 1]).nonzero().view(-1)
    values, cols = values[:, :k].contiguous(), cols[:, :k].contiguous()
    t = values[:, -1:]
    if crowded.numel():  # topk may have picked any of the tied columns: take the first ones
        rows = scores[crowded]
        above, tied = rows > t[crowded], rows == t[crowded]
        missing = k - above.sum(dim=1, keepdim=True)
        take = above | (tied & (tied.cumsum(dim=1) <= missing))
        cols[crowded] = take.nonzero()[:, 1].view(-1, k)  # row-major: ascending columns
        values[crowded] = rows.gather(1, cols[crowded])
    # order the k by (score descending, column ascending)
    order = cols.sort(dim=1).indices
    values, cols = values.gather(1, order), cols.gather(1, order)
    order = values.sort(dim=1, descending=True, stable=True).indices
    return values.gather(1, order), cols.gather(1, order)


def _exclusions(exclude: Union[Tensor, tuple[Tensor, Tensor]], n_users: int, n_items: int,
                device: torch.device) -> tuple[Optional[str], tuple[Tensor, Tensor]]:
    """(problem, (local users, global items)) of the pairs not to recommend."""
    if isinstance(exclude, Tensor) and (exclude.dim() != 2 or exclude.shape[0] != 2):
        return (f"topk_items: exclude must be [2, e] pairs or a (users, items) tuple (got "
                f"shape {tuple(exclude.shape)})", (exclude, exclude))
    u, it = exclude[0].to(device).long(), exclude[1].to(device).long()
    if u.dim() != 1 or u.shape != it.shape:
        return (f"topk_items: exclude (users, items) must be 1-d of the same length (got "
                f"shapes {tuple(u.shape)} and {tuple(it.shape)})", (u, it))
    bad_u, bad_i = u[(u < 0) | (u >= n_users)], it[(it < 0) | (it >= n_items)]
    if bad_u.numel():
        return (f"topk_items: excluded user index {int(bad_u[0])} is out of range for "
                f"{n_users} local users", (u, it))
    if bad_i.numel():
        return (f"topk_items: excluded item id {int(bad_i[0])} is out of range for "
                f"{n_items} items", (u, it))
    return None, (u, it)


def topk_items(user_emb: Tensor, item_emb: Tensor, k: int, *,
               exclude: Optional[Union[Tensor, tuple[Tensor, Tensor]]] = None,
               item_offsets: Optional[Union[Sequence[int], Tensor]] = None,
               context: Any = None) -> tuple[Tensor, Tensor]:
    r"""The ``k`` best items of ALL ranks for each of this rank's users, by dot product.

    Scores are ``user_emb @ item_emb_global.T`` where ``item_emb_global`` stacks the ranks'
    ``item_emb`` in rank order: rank ``r``'s items have the global ids ``[item_offsets[r],
    item_offsets[r + 1])``. The item blocks go around a ring (``P - 1`` point-to-point steps,
    counted in the traffic ledger under ``"topk_items"``); at no time does a rank hold more
    than ``n_users x min(block, 2**24 / n_users)`` scores, and never the full
    ``n_users x N_items`` matrix.

    Ties are broken by the lower global item id, so the lists equal the single-process ones
    for every number of ranks. (A block's matrix product may round a score differently in
    the last bit from a product with all items at once: two items whose scores agree to
    within rounding can then swap; exact ties, e.g. of integer-valued embeddings, cannot.)
    Excluded pairs score ``-inf`` (as masking them in the score matrix before a top-k) and
    so come last; when there are fewer than ``k`` items in all, the lists are padded with id
    ``-1`` and score ``-inf``.

    Args:
        user_emb: ``[n_users, d]`` embeddings of this rank's users (``n_users`` may be 0).
        item_emb: ``[n_items, d]`` embeddings of this rank's items (``n_items`` may be 0).
        k: the list length, a positive integer.
        exclude: ``[2, e]`` pairs (row 0: local user index, row 1: global item id), or a
            ``(users, items)`` tuple, not to recommend (e.g. the training interactions).
        item_offsets: ``[P + 1]`` first global item id of each rank, checked against the
            ranks' item counts (always gathered: one small all-gather); ``None``: taken from
            them.
        context: the ranks (see :mod:`pyg_sar.link.metrics`).

    Returns:
        ``(scores [n_users, k], item_ids [n_users, k])``, best first; ids are global, int64.

    Raises:
        ValueError: ``k`` is not a positive integer, the embedding widths differ or hold
            NaN, the offsets do not match the ranks' item counts, or an excluded pair is out
            of range.
    """
    k = _check_k("topk_items", k)
    comm = _comm(context)
    rank = 0 if comm is None else comm.rank
    p = 1 if comm is None else comm.world_size
    problem = None
    if user_emb.dim() != 2 or item_emb.dim() != 2 or user_emb.shape[1] != item_emb.shape[1]:
        problem = (f"topk_items: expected user_emb [n_users, d] and item_emb [n_items, d] "
                   f"(got shapes {tuple(user_emb.shape)} and {tuple(item_emb.shape)})")
    elif bool(torch.isnan(user_emb).any()) or bool(torch.isnan(item_emb).any()):
        which = "user_emb" if bool(torch.isnan(user_emb).any()) else "item_emb"
        problem = f"topk_items: {which} contains NaN"
    # the counts are gathered even when given: a rank with other offsets would break the ring
    offsets = row_offsets(item_emb.shape[0] if item_emb.dim() == 2 else 0, comm)
    if problem is None and item_offsets is not None:
        given = [int(o) for o in (item_offsets.tolist() if isinstance(item_offsets, Tensor)
                                  else item_offsets)]
        if given != offsets:
            problem = (f"topk_items: item_offsets {given} do not match the ranks' item "
                       f"counts (offsets {offsets})")
    excluded = None
    if problem is None and exclude is not None:
        problem, excluded = _exclusions(exclude, user_emb.shape[0], offsets[-1],
                                        user_emb.device)
    # with explicit offsets every rank may have a different problem: agree before the ring
    _agree(comm, "topk_items", problem, user_emb.device)
    users = user_emb.detach()
    n = users.shape[0]
    best = (users.new_full((n, 0), float("-inf")),
            torch.empty((n, 0), dtype=torch.long, device=users.device))
    block = item_emb.detach().to(users.dtype).contiguous()
    owner = rank
    for step in range(p):
        pending = None
        if step < p - 1:  # pass the block on while scoring it (empty blocks do not travel)
            src = (owner - 1) % p
            incoming = block.new_empty((offsets[src + 1] - offsets[src], block.shape[1]))
            send = comm.isend(block, (rank + 1) % p, tag=_TAG) if block.shape[0] else None
            recv = comm.irecv(incoming, (rank - 1) % p, tag=_TAG) if incoming.shape[0] \
                else None
            pending = (send, recv, incoming, src)
            comm.traffic.add("topk_items", "rows", block.numel() * block.element_size(),
                             incoming.numel() * incoming.element_size())
        best = _score_block(best, users, block, offsets[owner], k, excluded)
        if pending is not None:
            send, recv, block, owner = pending
            for work in (recv, send):
                if work is not None:
                    work.wait()
    scores, ids = best
    if ids.shape[1] < k:  # fewer than k items in all
        pad = k - ids.shape[1]
        scores = torch.cat([scores, scores.new_full((n, pad), float("-inf"))], dim=1)
        ids = torch.cat([ids, ids.new_full((n, pad), -1)], dim=1)
    return scores, ids
