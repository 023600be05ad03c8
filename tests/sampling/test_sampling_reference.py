"""The pure-torch sampling operators against naive per-row / per-minibatch oracles."""
from __future__ import annotations

import pytest
import torch

from pyg_sar.ops import sampling_reference as ref
from pyg_sar.ops import sampling_rng as rng
from pyg_sar.sampling import SamplingGraph

from .helpers import random_graph


def test_torch_rng_matches_python_ints():
    keys = [rng.make_key(1, 2, 3), rng.make_key(0), -5, 2**62, -(2**63)]
    t = torch.tensor(keys)
    for c in (0, 1, 7, 2**40):
        got = rng.dart_tensor(t, torch.full_like(t, c))
        assert got.tolist() == [rng.dart(k, c) for k in keys]
        assert bool(((got >= 0) & (got < 1)).all())
        mixed = rng.combine_tensor(t, torch.full_like(t, c)).tolist()
        assert mixed == [rng._signed(rng.combine(k, c)) for k in keys]


@pytest.fixture(scope="module")
def graph():
    data = random_graph(300, 2400, seed=3)
    return data, SamplingGraph.from_edge_index(data.edge_index, data.num_nodes)


def test_csr_rows_ascending_with_input_positions(graph):
    data, g = graph
    for v in (0, 1, 2, 17, 299):
        cols = g.col[g.rowptr[v]:g.rowptr[v + 1]]
        assert bool((cols[1:] > cols[:-1]).all())
        eids = g.e_id[g.rowptr[v]:g.rowptr[v + 1]]
        assert torch.equal(data.edge_index[1, eids], torch.full_like(eids, v))
        assert torch.equal(data.edge_index[0, eids], cols)


@pytest.mark.parametrize("fanout", [0, 1, 3, 10, -1])
def test_sample_uniform_properties(graph, fanout):
    _, g = graph
    rows = torch.randperm(300, generator=torch.Generator().manual_seed(1))[:120]
    rows = torch.cat([rows, rows[:5]])  # repeated rows with the same key: same picks
    keys = rng.combine_tensor(torch.full_like(rows, rng.make_key(9)), rows)
    ptr, pos = ref.sample_uniform_reference(g.rowptr, rows, keys, fanout)
    deg = g.rowptr[rows + 1] - g.rowptr[rows]
    want = deg if fanout < 0 else deg.clamp(max=fanout)
    assert torch.equal(ptr.diff(), want)
    for i, v in enumerate(rows.tolist()):
        p = pos[ptr[i]:ptr[i + 1]]
        assert bool(((p >= g.rowptr[v]) & (p < g.rowptr[v + 1])).all()), "edge outside its row"
        assert p.unique().numel() == p.numel(), "a neighbour picked twice"
        assert bool((p[1:] > p[:-1]).all())
        if deg[i] <= max(fanout, 0) or fanout < 0:
            assert torch.equal(p, torch.arange(int(g.rowptr[v]), int(g.rowptr[v + 1])))
    for i in range(5):
        a, b = 120 + i, i
        assert torch.equal(pos[ptr[a]:ptr[a + 1]], pos[ptr[b]:ptr[b + 1]])


def test_sample_uniform_follows_the_sequential_rejection_rule(graph):
    """Vectorised rounds == one dart at a time, accepting the darts that hit a new entry."""
    _, g = graph
    rows = torch.arange(300)
    keys = rng.combine_tensor(torch.full_like(rows, rng.make_key(5)), rows)
    ptr, pos = ref.sample_uniform_reference(g.rowptr, rows, keys, 4)
    for v in range(300):
        d = int(g.rowptr[v + 1] - g.rowptr[v])
        if d <= 4:
            continue
        picked, t = [], 0
        while len(picked) < 4:
            j = min(int(rng.dart(int(keys[v]), t) * d), d - 1)
            t += 1
            if j not in picked:
                picked.append(j)
        assert (pos[ptr[v]:ptr[v + 1]] - g.rowptr[v]).tolist() == sorted(picked)


def test_ladies_weights_match_a_dense_product(graph):
    _, g = graph
    rows = torch.tensor([3, 9, 1, 3, 200, 5, 7])
    batch_ptr = torch.tensor([0, 3, 3, 7])  # minibatch 1 has no rows
    ptr, cand, weight = ref.ladies_weights_reference(g.rowptr, g.col, g.values, rows,
                                                     batch_ptr, g.num_nodes)
    dense = torch.zeros(300, 300, dtype=torch.float64)
    dense_rows = torch.repeat_interleave(torch.arange(300), g.rowptr.diff())
    dense[dense_rows, g.col] = g.values
    for b in range(3):
        q = torch.zeros(300, dtype=torch.float64)
        for v in rows[batch_ptr[b]:batch_ptr[b + 1]].tolist():
            q[v] += 1.0
        want = q @ (dense * dense)
        nz = want.nonzero().view(-1)
        assert torch.equal(cand[ptr[b]:ptr[b + 1]], nz)
        torch.testing.assert_close(weight[ptr[b]:ptr[b + 1]], want[nz], rtol=1e-14, atol=0)


def test_sample_weighted_properties():
    weight = torch.tensor([0.5, 0.0, 2.0, 1.0, 0.25, 3.0, 0.0, 1.0, 0.1, 0.0, 0.0, 4.0, 4.0],
                          dtype=torch.float64)
    ptr = torch.tensor([0, 9, 11, 13])  # row 1 has only zeros; row 2 fewer than the fanout
    keys = torch.tensor([rng.make_key(i) for i in range(3)])
    out_ptr, pos = ref.sample_weighted_reference(ptr, weight, keys, 4)
    assert out_ptr.diff().tolist() == [4, 0, 2]
    row0 = pos[:4]
    assert bool((weight[row0] > 0).all()) and row0.unique().numel() == 4
    assert pos[4:].tolist() == [11, 12]


def test_extract_columns_match_a_filter(graph):
    _, g = graph
    rows = torch.tensor([3, 9, 1, 200, 5, 7, 3])
    row_batch = torch.tensor([0, 0, 0, 1, 2, 2, 2])
    keep = [torch.tensor([0, 5, 17, 120, 250]), torch.tensor([], dtype=torch.long),
            torch.arange(0, 300, 3)]
    keep_ptr = torch.tensor([0, 5, 5, 5 + keep[2].numel()])
    ptr, pos = ref.extract_columns_reference(g.rowptr, g.col, rows, row_batch, keep_ptr,
                                             torch.cat(keep), g.num_nodes)
    for i, (v, b) in enumerate(zip(rows.tolist(), row_batch.tolist())):
        allp = torch.arange(int(g.rowptr[v]), int(g.rowptr[v + 1]))
        want = allp[torch.isin(g.col[allp], keep[b])]
        assert torch.equal(pos[ptr[i]:ptr[i + 1]], want)


def test_relabel_matches_a_dictionary_walk():
    prev = [torch.tensor([4, 9, 1, 2]), torch.tensor([7, 3, 9])]
    prev_ptr = [torch.tensor([0, 2, 4]), torch.tensor([0, 2, 3])]
    cand = torch.tensor([9, 5, 5, 4, 8, 7, 1, 2, 9, 6, 9, 3, 6])
    cand_ptr = torch.tensor([0, 8, 13])
    new, new_ptr, local = ref.relabel_reference(10, prev, prev_ptr, cand, cand_ptr)
    want_new, want_local, want_ptr = [], [], [0]
    for b in range(2):
        held = {}
        for nodes, ptr in zip(prev, prev_ptr):
            for v in nodes[ptr[b]:ptr[b + 1]].tolist():
                held[v] = len(held)
        for v in cand[cand_ptr[b]:cand_ptr[b + 1]].tolist():
            if v not in held:
                held[v] = len(held)
                want_new.append(v)
            want_local.append(held[v])
        want_ptr.append(len(want_new))
    assert new.tolist() == want_new and local.tolist() == want_local
    assert new_ptr.tolist() == want_ptr


def test_bad_rows_are_refused(graph):
    _, g = graph
    with pytest.raises(ValueError, match=r"rows must lie in \[0, N\) = \[0, 300\)"):
        ref.csr_select_rows_reference(g.rowptr, torch.tensor([0, 300]))
    with pytest.raises(ValueError, match="row_keys must be int64"):
        ref.sample_uniform_reference(g.rowptr, torch.tensor([0]), torch.tensor([0.5]), 2)
    with pytest.raises(ValueError, match="weights must be finite"):
        ref.sample_weighted_reference(torch.tensor([0, 2]),
                                      torch.tensor([1.0, -1.0], dtype=torch.float64),
                                      torch.tensor([0]), 1)
