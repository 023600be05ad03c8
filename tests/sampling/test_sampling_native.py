"""The native bulk-sampling kernels pick exactly what the pure-torch reference picks."""
from __future__ import annotations

import os

import pytest
import torch

from pyg_sar.ops import native_available
from pyg_sar.ops import sampling as ops
from pyg_sar.ops import sampling_rng as rng
from pyg_sar.ops._native import REQUIRE_NATIVE_ENV
from pyg_sar.ops.sampling import native_sampling_available
from pyg_sar.sampling import LocalRows, SamplingGraph, sample_bulk

from .helpers import random_graph

needs_native = pytest.mark.skipif(not native_sampling_available(),
                                  reason="needs pyg_sar._C built with the bulk_* operators")


@pytest.mark.skipif(os.getenv(REQUIRE_NATIVE_ENV, "0") != "1" or not native_available(),
                    reason=f"runs when {REQUIRE_NATIVE_ENV}=1 and pyg_sar._C is built")
def test_the_build_has_the_sampling_kernels():
    assert native_sampling_available(), "pyg_sar._C lacks the bulk_* operators: rebuild it"


@pytest.fixture(scope="module")
def graph():
    data = random_graph(2000, 16000, seed=5)
    return SamplingGraph.from_edge_index(data.edge_index, 2000)


def _both(fn, *args, **kw):
    return fn(*args, backend="reference", **kw), fn(*args, backend="native", **kw)


def _equal(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and torch.equal(x, y)


@needs_native
@pytest.mark.parametrize("fanout", [0, 1, 5, 25, 100, -1])
def test_select_and_uniform_picks_equal_the_reference(graph, fanout):
    rows = torch.randint(0, 2000, (3000,), generator=torch.Generator().manual_seed(fanout + 9))
    keys = rng.combine_tensor(torch.full_like(rows, rng.make_key(fanout)), rows)
    _equal(*_both(ops.select_rows, graph.rowptr, rows))
    _equal(*_both(ops.sample_uniform, graph.rowptr, rows, keys, fanout))


@needs_native
def test_large_fanout_path_equals_the_reference():
    rowptr = torch.tensor([0, 500, 1500])
    rows = torch.tensor([0, 1, 1, 0])
    keys = torch.tensor([rng.make_key(i) for i in range(4)])
    _equal(*_both(ops.sample_uniform, rowptr, rows, keys, 300))


@needs_native
def test_ladies_weights_picks_and_extraction_equal_the_reference(graph):
    g = graph
    gen = torch.Generator().manual_seed(2)
    rows = torch.randint(0, 2000, (700,), generator=gen)
    batch_ptr = torch.tensor([0, 100, 100, 350, 700])
    ref, nat = _both(ops.ladies_weights, g.rowptr, g.col, g.values, rows, batch_ptr, g.num_nodes)
    _equal(ref, nat)
    ptr, cand, weight = nat
    keys = torch.tensor([rng.make_key(7, b) for b in range(4)])
    for size in (0, 3, 64, 500, 100000):
        picks = _both(ops.sample_weighted, ptr, weight, keys, size)
        _equal(*picks)
        pick_ptr, pos = picks[1]
        row_batch = torch.repeat_interleave(torch.arange(4), batch_ptr.diff())
        _equal(*_both(ops.extract_columns, g.rowptr, g.col, rows, row_batch, pick_ptr,
                      cand[pos], g.num_nodes))


@needs_native
def test_relabel_equals_the_reference():
    gen = torch.Generator().manual_seed(3)
    prev = [torch.cat([torch.randperm(50, generator=gen)[:4],
                       torch.randperm(50, generator=gen)[:4]])]
    prev_ptr = [torch.tensor([0, 4, 8])]
    cand = torch.randint(0, 50, (40,), generator=gen)
    cand_ptr = torch.tensor([0, 25, 40])
    _equal(*_both(ops.relabel, 50, prev, prev_ptr, cand, cand_ptr))


@needs_native
@pytest.mark.parametrize("method,sizes", [("sage", [10, 5, 3]), ("ladies", [200, 100, 50])])
def test_bulk_sampler_native_equals_reference_for_any_thread_count(graph, method, sizes):
    seeds = [torch.randperm(2000, generator=torch.Generator().manual_seed(b))[:64]
             for b in range(6)]
    keys = [rng.make_key(0, 0, b) for b in range(6)]
    want = sample_bulk(LocalRows(graph, "reference"), seeds, keys, sizes, method,
                       backend="reference")
    threads = torch.get_num_threads()
    try:
        for t in (1, 2, 3):
            torch.set_num_threads(t)
            got = sample_bulk(LocalRows(graph, "native"), seeds, keys, sizes, method,
                              backend="native")
            for field in ("n_id", "node_ptr", "num_sampled_nodes", "edge_index", "e_id",
                          "edge_ptr", "num_sampled_edges"):
                assert torch.equal(getattr(want, field), getattr(got, field)), (t, field)
    finally:
        torch.set_num_threads(threads)


@needs_native
def test_native_errors_name_the_problem(graph):
    g = graph
    with pytest.raises(ValueError, match=r"bulk_select_rows: rows must lie in \[0, N\)"):
        ops.select_rows(g.rowptr, torch.tensor([2000]), backend="native")
    with pytest.raises(ValueError, match="bulk_sample_uniform: row_keys must be int64"):
        ops.sample_uniform(g.rowptr, torch.tensor([1, 2]), torch.tensor([1]), 3,
                           backend="native")
    with pytest.raises(ValueError, match="bulk_sample_weighted: weights must be finite"):
        ops.sample_weighted(torch.tensor([0, 2]), torch.tensor([1.0, float("nan")],
                                                               dtype=torch.float64),
                            torch.tensor([0]), 1, backend="native")
    with pytest.raises(ValueError, match=r"bulk_ladies_weights: col values must lie in"):
        ops.ladies_weights(g.rowptr, g.col, g.values, torch.tensor([0, 1, 2, 3]),
                           torch.tensor([0, 4]), 3, backend="native")
    with pytest.raises(ValueError, match=r"bulk_relabel: cand must lie in \[0, num_nodes\)"):
        ops.relabel(10, [], [], torch.tensor([10]), torch.tensor([0, 1]), backend="native")
