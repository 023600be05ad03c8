"""Bulk sampling on each device: the native kernels (CPU or CUDA; LADIES' weights and the
relabelling run their torch reference on a GPU by design) pick exactly what the pure-torch
reference picks on the CPU, op by op and for whole GraphSAGE / LADIES bulks, and the kernels
are checked to have run on the device."""
from __future__ import annotations

import pytest
import torch

from pyg_sar.ops import sampling as ops
from pyg_sar.ops import sampling_rng as rng
from pyg_sar.sampling import LocalRows, SamplingGraph, sample_bulk
from pyg_sar.testing.devices import NativeOpCounter, require_native, with_devices

from .helpers import random_graph

pytestmark = pytest.mark.device

N = 2000


@pytest.fixture(scope="module")
def graph():
    data = random_graph(N, 16000, seed=5)
    return SamplingGraph.from_edge_index(data.edge_index, N)


def _equal_on_cpu(want, got, device):
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert g.device.type == device.type, g.device
        assert w.dtype == g.dtype and torch.equal(w, g.cpu())


def test_graph_moves_to_a_device_and_back(graph):
    same = graph.to("cpu")
    assert same is graph
    g = graph.to("meta")
    assert g.device.type == "meta" and g.num_nodes == graph.num_nodes
    assert g.rowptr.shape == graph.rowptr.shape and g.col.shape == graph.col.shape


@with_devices
@pytest.mark.parametrize("fanout", [0, 1, 5, 100, -1])
def test_uniform_picks_on_the_device_equal_the_reference(graph, device, fanout):
    dev = require_native(device)
    rows = torch.randint(0, N, (3000,), generator=torch.Generator().manual_seed(fanout + 9))
    keys = rng.combine_tensor(torch.full_like(rows, rng.make_key(fanout)), rows)
    g = graph.to(dev)
    with NativeOpCounter() as calls:
        got_sel = ops.select_rows(g.rowptr, rows.to(dev), backend="native")
        got_uni = ops.sample_uniform(g.rowptr, rows.to(dev), keys.to(dev), fanout,
                                     backend="native")
    _equal_on_cpu(ops.select_rows(graph.rowptr, rows, backend="reference"), got_sel, dev)
    _equal_on_cpu(ops.sample_uniform(graph.rowptr, rows, keys, fanout, backend="reference"),
                  got_uni, dev)
    assert calls.on(dev.type, "bulk_select_rows") == 1
    assert calls.on(dev.type, "bulk_sample_uniform") == 1


@with_devices
def test_ladies_picks_and_extraction_on_the_device_equal_the_reference(graph, device):
    dev = require_native(device)
    g, gd = graph, graph.to(dev)
    rows = torch.randint(0, N, (700,), generator=torch.Generator().manual_seed(2))
    batch_ptr = torch.tensor([0, 100, 100, 350, 700])
    want = ops.ladies_weights(g.rowptr, g.col, g.values, rows, batch_ptr, N,
                              backend="reference")
    got = ops.ladies_weights(gd.rowptr, gd.col, gd.values, rows.to(dev), batch_ptr.to(dev), N)
    _equal_on_cpu(want, got, dev)
    ptr, cand, weight = want
    keys = torch.tensor([rng.make_key(7, b) for b in range(4)])
    row_batch = torch.repeat_interleave(torch.arange(4), batch_ptr.diff())
    for size in (0, 3, 64, 500):
        with NativeOpCounter() as calls:
            picks = ops.sample_weighted(ptr.to(dev), weight.to(dev), keys.to(dev), size,
                                        backend="native")
        want_picks = ops.sample_weighted(ptr, weight, keys, size, backend="reference")
        _equal_on_cpu(want_picks, picks, dev)
        assert calls.on(dev.type, "bulk_sample_weighted") == 1
        pick_ptr, pos = want_picks
        with NativeOpCounter() as calls:
            got_ex = ops.extract_columns(gd.rowptr, gd.col, rows.to(dev), row_batch.to(dev),
                                         pick_ptr.to(dev), cand[pos].to(dev), N,
                                         backend="native")
        _equal_on_cpu(ops.extract_columns(g.rowptr, g.col, rows, row_batch, pick_ptr,
                                          cand[pos], N, backend="reference"), got_ex, dev)
        assert calls.on(dev.type, "bulk_extract_columns") == 1


@with_devices
@pytest.mark.parametrize("method,sizes", [("sage", [10, 5, 3]), ("ladies", [200, 100, 50])])
def test_bulk_sampler_on_the_device_equals_the_reference(graph, device, method, sizes):
    dev = require_native(device)
    seeds = [torch.randperm(N, generator=torch.Generator().manual_seed(b))[:64]
             for b in range(6)]
    keys = [rng.make_key(0, 0, b) for b in range(6)]
    want = sample_bulk(LocalRows(graph, "reference"), seeds, keys, sizes, method,
                       backend="reference")
    with NativeOpCounter() as calls:
        got = sample_bulk(LocalRows(graph.to(dev), "auto"), [s.to(dev) for s in seeds], keys,
                          sizes, method)
    for field in ("n_id", "node_ptr", "num_sampled_nodes", "edge_index", "e_id", "edge_ptr",
                  "num_sampled_edges"):
        value = getattr(got, field)
        assert value.device.type == dev.type, (field, value.device)
        assert torch.equal(getattr(want, field), value.cpu()), field
    op = "bulk_sample_uniform" if method == "sage" else "bulk_sample_weighted"
    assert calls.on(dev.type, op) == len(sizes), calls.calls
