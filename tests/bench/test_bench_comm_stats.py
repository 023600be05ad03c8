"""Byte counters on the communicator (``comm.stats``) and the cached transposed block."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

import pyg_sar
from pyg_sar.core.kernels import block_sum_transpose, transpose_csr
from pyg_sar.distributed.transport import CommStats
from pyg_sar.testing import has_mpi, run_on_ranks

HERE = Path(__file__).resolve().parent


def test_comm_stats_reset_and_dict():
    s = CommStats()
    s.bytes_sent, s.bytes_recv, s.messages, s.wait_s = 10, 20, 3, 0.5
    assert s.as_dict() == {"bytes_sent": 10, "bytes_recv": 20, "messages": 3, "wait_s": 0.5}
    s.reset()
    assert s.as_dict() == {"bytes_sent": 0, "bytes_recv": 0, "messages": 0, "wait_s": 0.0}


@pytest.mark.parametrize("weighted", [False, True])
def test_cached_transpose_matches_native_backward(weighted):
    g = torch.Generator().manual_seed(0)
    num_dst, num_src, num_edges = 300, 200, 3000
    dst = torch.randint(0, num_dst, (num_edges,), generator=g).sort().values
    col = torch.randint(0, num_src, (num_edges,), generator=g)
    rowptr = torch.searchsorted(dst, torch.arange(num_dst + 1))
    w = torch.rand(num_edges, generator=g, dtype=torch.float64) if weighted else None
    grad = torch.randn(num_dst, 7, generator=g, dtype=torch.float64)
    colptr, row_t, perm = transpose_csr(rowptr, col, num_src)
    assert colptr[-1].item() == num_edges
    assert torch.equal(col[perm], torch.repeat_interleave(torch.arange(num_src),
                                                          colptr[1:] - colptr[:-1]))
    expect = torch.zeros(num_src, 7, dtype=torch.float64).index_add_(
        0, col, grad[dst] * (w.view(-1, 1) if weighted else 1))
    plain = block_sum_transpose(grad, rowptr, col, w, num_src)
    cached = block_sum_transpose(grad, rowptr, col, w, num_src, (colptr, row_t, perm))
    torch.testing.assert_close(cached, expect)
    assert torch.equal(cached, plain)  # same summation order as the native backward
    # a mean's 1 / degree folded into the edge weights instead of a scaled copy of grad
    inv = 1.0 / (rowptr[1:] - rowptr[:-1]).clamp(min=1).to(torch.float64)
    scaled = block_sum_transpose(grad, rowptr, col, w, num_src, (colptr, row_t, perm), inv)
    torch.testing.assert_close(scaled, block_sum_transpose(grad * inv.view(-1, 1), rowptr, col,
                                                           w, num_src))
    torch.testing.assert_close(block_sum_transpose(grad, rowptr, col, w, num_src, None, inv),
                               scaled)


@pytest.mark.skipif(not has_mpi(), reason="needs mpiexec (mpich/Open MPI) and mpi4py")
def test_engine_traffic_is_counted(tmp_path):
    from pyg_sar.datasets import sbm
    data = sbm(num_nodes=400, num_edges=3000, num_classes=4, homophily=0.3, seed=0)
    pyg_sar.partition_graph(data, 2, tmp_path / "p2", method="metis")
    feats = 5
    for r in run_on_ranks(f"{HERE / 'bench_counter_cases.py'}:counters", 2, timeout=300,
                          kwargs={"parts": str(tmp_path / "p2"), "feats": feats}):
        sent, recv = r["send_rows"] * feats * 4, r["recv_rows"] * feats * 4
        assert sent > 0 and recv > 0
        assert (r["ring"]["bytes_sent"], r["ring"]["bytes_recv"]) == (sent, recv)
        assert r["ring"]["messages"] == 1
        # halo: the rows forward, their gradients back the other way
        assert (r["halo"]["bytes_sent"], r["halo"]["bytes_recv"]) == (sent + recv, recv + sent)
        assert r["halo"]["messages"] == 2
        assert r["ring"]["wait_s"] >= 0 and r["halo"]["wait_s"] > 0
