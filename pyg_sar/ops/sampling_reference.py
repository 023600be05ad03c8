r"""Pure-torch reference of the bulk-sampling operators (the oracle of the native kernels).

The adjacency is a CSR matrix ``A`` over destinations (``rowptr``, ``col``): row ``v`` lists the
in-neighbours of ``v`` in ascending order. A selection matrix ``Q`` picks rows of ``A`` (one per
frontier vertex of all ``k`` minibatches, stacked; or, for LADIES, one row per minibatch with a
one for each of its frontier vertices); every operator here is one step of the matrix-product
formulation of sampling:

* :func:`csr_select_rows_reference`: the pattern of ``Q @ A`` (edge positions of chosen rows);
* :func:`sample_uniform_reference`: ``fanout`` distinct picks per row of ``Q @ A`` with uniform
  values (GraphSAGE), by inverse transform ("dart throwing") with rejection of repeats;
* :func:`ladies_weights_reference`: ``Q @ (A * A)`` with one row per minibatch (LADIES'
  squared, row-normalised values summed over the minibatch's frontier);
* :func:`sample_weighted_reference`: ``fanout`` distinct picks per weighted row by inverse
  transform on the row's prefix sums, in rounds (repeats rejected, picked weights zeroed and
  prefix sums rebuilt between rounds): successive sampling without replacement;
* :func:`extract_columns_reference`: the edges of chosen rows whose column lies in their
  minibatch's sampled set, all minibatches at once through per-minibatch column offsets
  (``key = batch * num_cols + col``);
* :func:`relabel_reference`: per-minibatch local ids (existing nodes first, new nodes in order
  of first appearance).

Random numbers come from :mod:`pyg_sar.ops.sampling_rng` (keyed, counter-based), so the native
kernels reproduce these picks bit for bit. Picks are returned sorted by position in each row.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from pyg_sar.ops.sampling_rng import dart_tensor


def _arange_segments(counts: Tensor) -> Tensor:
    """``[0, 1, .., c0 - 1, 0, 1, .., c1 - 1, ...]`` for the segment sizes ``counts``."""
    total = int(counts.sum())
    if total == 0:
        return counts.new_zeros(0)
    starts = torch.cumsum(counts, 0) - counts
    return torch.arange(total, device=counts.device) - torch.repeat_interleave(starts, counts)


def _ptr(counts: Tensor) -> Tensor:
    return torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])


def _check_rows(op: str, rowptr: Tensor, rows: Tensor) -> None:
    if rowptr.dtype != torch.int64 or rows.dtype != torch.int64:
        raise ValueError(f"{op}: rowptr and rows must be int64 (got {rowptr.dtype} and "
                         f"{rows.dtype})")
    n = rowptr.numel() - 1
    if n < 0:
        raise ValueError(f"{op}: rowptr must have N + 1 >= 1 entries (got 0)")
    if rows.numel() and (int(rows.min()) < 0 or int(rows.max()) >= n):
        raise ValueError(f"{op}: rows must lie in [0, N) = [0, {n}) (got min {int(rows.min())}, "
                         f"max {int(rows.max())})")


def csr_select_rows_reference(rowptr: Tensor, rows: Tensor) -> tuple[Tensor, Tensor]:
    """Pattern of ``Q @ A``: ``(out_ptr [R + 1], pos [nnz])``, ``pos`` the CSR positions of the
    edges of ``rows`` (row by row, in CSR order)."""
    _check_rows("csr_select_rows", rowptr, rows)
    start = rowptr[rows]
    deg = rowptr[rows + 1] - start
    return _ptr(deg), torch.repeat_interleave(start, deg) + _arange_segments(deg)


def _first_occurrence(group: Tensor, value: Tensor) -> Tensor:
    """Mask of the entries whose ``(group, value)`` pair did not occur at a smaller index."""
    if group.numel() == 0:
        return torch.zeros(0, dtype=torch.bool, device=group.device)
    span = int(value.max()) + 1
    composite = group * span + value
    order = torch.sort(composite, stable=True).indices
    sorted_keys = composite[order]
    first_sorted = torch.ones_like(sorted_keys, dtype=torch.bool)
    first_sorted[1:] = sorted_keys[1:] != sorted_keys[:-1]
    first = torch.zeros_like(first_sorted)
    first[order] = first_sorted
    return first


def sample_uniform_reference(rowptr: Tensor, rows: Tensor, row_keys: Tensor,
                             fanout: int) -> tuple[Tensor, Tensor]:
    """``fanout`` distinct uniform picks from each selected row (all of it when shorter, or when
    ``fanout < 0``). Returns ``(out_ptr [R + 1], pos)`` with each row's picks ascending.

    Row ``i`` throws darts ``t = 0, 1, ...``: ``j = floor(dart(row_keys[i], t) * deg)``; a dart
    that hits an already picked ``j`` is rejected; it stops at ``fanout`` picks.
    """
    _check_rows("sample_uniform", rowptr, rows)
    if row_keys.shape != rows.shape or row_keys.dtype != torch.int64:
        raise ValueError(f"sample_uniform: row_keys must be int64 of the shape of rows "
                         f"{tuple(rows.shape)} (got {row_keys.dtype} {tuple(row_keys.shape)})")
    start = rowptr[rows]
    deg = rowptr[rows + 1] - start
    if fanout < 0:
        return csr_select_rows_reference(rowptr, rows)
    counts = torch.clamp(deg, max=fanout)
    out_ptr = _ptr(counts)
    pos = torch.empty(int(out_ptr[-1]), dtype=torch.int64, device=rows.device)
    take_all = deg <= fanout
    # rows that keep all their edges
    all_rows = take_all.nonzero().view(-1)
    seg = _arange_segments(deg[all_rows])
    pos[torch.repeat_interleave(out_ptr[all_rows], deg[all_rows]) + seg] = \
        torch.repeat_interleave(start[all_rows], deg[all_rows]) + seg
    # rows that throw darts
    dart_rows = (~take_all).nonzero().view(-1)
    r = dart_rows.numel()
    if r and fanout > 0:
        picks = torch.full((r, fanout), -1, dtype=torch.int64, device=rows.device)
        count = torch.zeros(r, dtype=torch.int64, device=rows.device)
        thrown = torch.zeros(r, dtype=torch.int64, device=rows.device)
        d = deg[dart_rows]
        keys = row_keys[dart_rows]
        active = torch.arange(r, device=rows.device)
        while active.numel():
            need = fanout - count[active]
            owner = torch.repeat_interleave(active, need)
            t = torch.repeat_interleave(thrown[active], need) + _arange_segments(need)
            j = torch.minimum((dart_tensor(keys[owner], t) * d[owner]).to(torch.int64),
                              d[owner] - 1)
            fresh = _first_occurrence(owner, j) & ~(picks[owner] == j[:, None]).any(1)
            acc_owner, acc_j = owner[fresh], j[fresh]
            slot = count[acc_owner] + _arange_segments(
                torch.bincount(acc_owner, minlength=r)[active])
            picks[acc_owner, slot] = acc_j
            count += torch.bincount(acc_owner, minlength=r)
            thrown[active] += need
            active = active[count[active] < fanout]
        picks = torch.sort(picks, dim=1).values
        target = out_ptr[dart_rows][:, None] + torch.arange(fanout, device=rows.device)
        pos[target.reshape(-1)] = (start[dart_rows][:, None] + picks).reshape(-1)
    return out_ptr, pos


def ladies_weights_reference(rowptr: Tensor, col: Tensor, values: Tensor, rows: Tensor,
                             batch_ptr: Tensor, num_cols: int
                             ) -> tuple[Tensor, Tensor, Tensor]:
    """``Q @ (A * A)`` with one row per minibatch: minibatch ``b``'s rows are
    ``rows[batch_ptr[b]:batch_ptr[b + 1]]``. Returns ``(ptr [k + 1], cand, weight)``: per
    minibatch the distinct columns (ascending) and the sums of squared values, accumulated in
    the order of the rows and their edges (float64)."""
    _check_rows("ladies_weights", rowptr, rows)
    k = batch_ptr.numel() - 1
    sel_ptr, pos = csr_select_rows_reference(rowptr, rows)
    row_batch = torch.repeat_interleave(torch.arange(k, device=rows.device), batch_ptr.diff())
    edge_batch = torch.repeat_interleave(row_batch, sel_ptr.diff())
    key = edge_batch * num_cols + col[pos]
    uniq, inverse = torch.unique(key, sorted=True, return_inverse=True)
    vals = values[pos].to(torch.float64)
    # index_add_ on a 1-D CPU tensor adds in index order, as the kernel does; on a GPU it adds
    # with atomics in any order (float64 sums that differ in the last bit, and so different
    # samples), so the sums are made on the CPU wherever the rows are.
    weight = torch.zeros(uniq.numel(), dtype=torch.float64)
    weight.index_add_(0, inverse.cpu(), (vals * vals).cpu())
    weight = weight.to(rows.device)
    ptr = _ptr(torch.bincount(torch.div(uniq, num_cols, rounding_mode="floor"), minlength=k)
               if uniq.numel() else torch.zeros(k, dtype=torch.int64, device=rows.device))
    return ptr, uniq % num_cols if num_cols > 0 else uniq, weight


def sample_weighted_reference(ptr: Tensor, weight: Tensor, row_keys: Tensor,
                              fanout: int) -> tuple[Tensor, Tensor]:
    """``fanout`` distinct picks per row with probability proportional to ``weight``
    (successive sampling without replacement); all positive entries when there are at most
    ``fanout`` of them. Returns ``(out_ptr, pos)``, ``pos`` into ``weight``, ascending per row.

    Rounds: throw ``fanout - picked`` darts ``u``; each lands on the first entry whose prefix
    sum exceeds ``u * total``; darts on an entry already hit in this round are rejected;
    then the picked entries' weights are zeroed and the prefix sums rebuilt.
    """
    if weight.dtype != torch.float64:
        raise ValueError(f"sample_weighted: weight must be float64 (got {weight.dtype})")
    rows = ptr.numel() - 1
    out_counts, out_pos = [], []
    for i in range(rows):
        a, b = int(ptr[i]), int(ptr[i + 1])
        w = weight[a:b].clone()
        if bool((w < 0).any()) or not bool(torch.isfinite(w).all()):
            raise ValueError("sample_weighted: weights must be finite and >= 0")
        positive = (w > 0).nonzero().view(-1)
        if fanout < 0 or positive.numel() <= fanout:
            out_counts.append(positive.numel())
            out_pos.append(positive + a)
            continue
        picked: list[Tensor] = []
        count, thrown = 0, 0
        key = row_keys[i:i + 1]
        while count < fanout:
            prefix = torch.cumsum(w, 0)
            total = prefix[-1]
            last = int((w > 0).nonzero().view(-1)[-1])
            need = fanout - count
            u = dart_tensor(key.expand(need), torch.arange(thrown, thrown + need)) * total
            j = torch.searchsorted(prefix, u, right=True).clamp(max=last)
            first = _first_occurrence(torch.zeros_like(j), j)
            hit = j[first]
            picked.append(hit)
            w[hit] = 0.0
            count += hit.numel()
            thrown += need
        chosen = torch.sort(torch.cat(picked)).values if picked else positive[:0]
        out_counts.append(fanout)
        out_pos.append(chosen + a)
    counts = torch.tensor(out_counts, dtype=torch.int64)
    pos = torch.cat(out_pos) if out_pos else torch.zeros(0, dtype=torch.int64)
    return _ptr(counts), pos


def extract_columns_reference(rowptr: Tensor, col: Tensor, rows: Tensor, row_batch: Tensor,
                              keep_ptr: Tensor, keep_cols: Tensor,
                              num_cols: int) -> tuple[Tensor, Tensor]:
    """The edges of ``rows`` whose column is in the sampled set of the row's minibatch
    (``keep_cols[keep_ptr[b]:keep_ptr[b + 1]]``, ascending): ``Q @ A @ R`` for all minibatches
    with one product, columns offset by ``batch * num_cols``. Returns ``(out_ptr, pos)``."""
    _check_rows("extract_columns", rowptr, rows)
    sel_ptr, pos = csr_select_rows_reference(rowptr, rows)
    k = keep_ptr.numel() - 1
    keep_batch = torch.repeat_interleave(torch.arange(k, device=rows.device), keep_ptr.diff())
    keep_key = keep_batch * num_cols + keep_cols
    edge_batch = torch.repeat_interleave(row_batch, sel_ptr.diff())
    key = edge_batch * num_cols + col[pos]
    if keep_key.numel():
        at = torch.searchsorted(keep_key, key).clamp(max=keep_key.numel() - 1)
        keep = keep_key[at] == key
    else:
        keep = torch.zeros_like(key, dtype=torch.bool)
    edge_row = torch.repeat_interleave(torch.arange(rows.numel(), device=rows.device),
                                       sel_ptr.diff())
    counts = torch.bincount(edge_row[keep], minlength=rows.numel())
    return _ptr(counts), pos[keep]


def relabel_reference(num_nodes: int, prev_nodes: Sequence[Tensor], prev_ptr: Sequence[Tensor],
                      cand: Tensor, cand_ptr: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Per-minibatch local ids of candidate nodes.

    Minibatch ``b`` already holds, in local-id order, the nodes ``prev_nodes[h][prev_ptr[h][b]:
    prev_ptr[h][b + 1]]`` for ``h = 0, 1, ...``. Its candidates ``cand[cand_ptr[b]:cand_ptr[b +
    1]]`` not held yet become new nodes, numbered after the held ones in order of first
    appearance. Returns ``(new_nodes, new_ptr [k + 1], cand_local)``.
    """
    k = cand_ptr.numel() - 1
    device = cand.device
    ar = torch.arange(k, device=device)
    held_count = torch.zeros(k, dtype=torch.int64, device=device)
    held_keys, held_local = [], []
    for nodes, ptr in zip(prev_nodes, prev_ptr):
        counts = ptr.diff()
        held_keys.append(torch.repeat_interleave(ar, counts) * num_nodes + nodes)
        held_local.append(torch.repeat_interleave(held_count, counts) + _arange_segments(counts))
        held_count = held_count + counts
    hk = torch.cat(held_keys) if held_keys else torch.zeros(0, dtype=torch.int64)
    hl = torch.cat(held_local) if held_local else torch.zeros(0, dtype=torch.int64)
    order = torch.argsort(hk)
    hk, hl = hk[order], hl[order]
    cand_batch = torch.repeat_interleave(ar, cand_ptr.diff())
    ck = cand_batch * num_nodes + cand
    local = torch.full_like(cand, -1)
    if hk.numel() and ck.numel():
        at = torch.searchsorted(hk, ck).clamp(max=hk.numel() - 1)
        found = hk[at] == ck
        local[found] = hl[at[found]]
    missing = (local < 0).nonzero().view(-1)
    uniq, inverse = torch.unique(ck[missing], return_inverse=True)
    first = torch.full((uniq.numel(),), cand.numel(), dtype=torch.int64, device=device)
    first.scatter_reduce_(0, inverse, missing, reduce="amin")
    order = torch.argsort(first)  # first appearance; batches stay grouped
    new_keys = uniq[order]
    new_batch = torch.div(new_keys, num_nodes, rounding_mode="floor") if num_nodes else new_keys
    new_counts = torch.bincount(new_batch, minlength=k)
    rank_of = torch.empty_like(order)
    rank_of[order] = torch.arange(order.numel(), device=device)
    new_local = held_count[new_batch] + _arange_segments(new_counts)
    local[missing] = new_local[rank_of[inverse]]
    return new_keys - new_batch * num_nodes, _ptr(new_counts), local
