"""Rank side of the multi-rank device tests: every rank computes on ``ctx.device`` (several
ranks may share one GPU) and communicates through its backend (gloo and MPI stage GPU tensors
through host memory, NCCL carries them). One launch runs every case and returns the values;
the pytest side (test_multi_rank_device.py) asserts them."""
from __future__ import annotations

import torch

import pyg_sar
from tests.core import device_cases as dc
from tests.core import engine_cases as ec

ENGINE_LAYERS = ("gcn", "sage_mean", "gat", "gatv2_edge", "basic_sage_bn_jk")


def rows(src: int, dst: int, n: int, dtype: torch.dtype, device) -> torch.Tensor:
    """The rows rank ``src`` sends rank ``dst`` (distinct for every pair)."""
    base = torch.arange(n * 3, dtype=torch.float64).view(n, 3) + 100 * src + 10 * dst + 0.5
    return base.to(dtype).to(device)


def transport_cases(ctx) -> dict:
    """Point-to-point (into a non-contiguous buffer), all-reduce, broadcast and all-to-all of
    tensors on ``ctx.device``; each result is checked to stay on the device."""
    comm, dev, r, P = ctx.comm, ctx.device, ctx.rank, ctx.world_size
    out: dict = {"devices": []}

    def keep(t: torch.Tensor) -> list:
        out["devices"].append(t.device.type)
        return t.double().tolist() if t.dtype != torch.bool else t.tolist()

    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        works, bufs = [], {}
        for q in range(P):
            if q != r:
                holder = torch.zeros(3, 4, dtype=dtype, device=dev)
                bufs[q] = (holder, holder[:, 1:])
                works.append(comm.irecv(bufs[q][1], q, tag=3))
        for q in range(P):
            if q != r:
                works.append(comm.isend(rows(r, q, 3, dtype, dev), q, tag=3))
        for w in works:
            w.wait()
        out[f"p2p/{dtype}"] = {str(q): keep(h) for q, (h, _) in bufs.items()}
    total = comm.all_reduce(rows(r, 0, 2, torch.float32, dev))
    out["all_reduce"] = keep(total)
    out["all_reduce_bf16"] = keep(comm.all_reduce(rows(r, 0, 2, torch.bfloat16, dev)))
    out["all_reduce_max"] = keep(comm.all_reduce(torch.tensor([r, -r], device=dev), op="max"))
    out["broadcast"] = keep(comm.broadcast(rows(r, 0, 2, torch.float64, dev), src=P - 1))
    send = torch.cat([rows(r, q, q + 1, torch.float32, dev) for q in range(P)])
    recv = torch.empty(sum(r + 1 for _ in range(P)), 3, device=dev)
    comm.all_to_all_single(recv, send, [r + 1] * P, [q + 1 for q in range(P)])
    out["all_to_all"] = keep(recv)
    return out


def staging_counts(ctx) -> list:
    staging = getattr(ctx.comm, "staging", None)
    return [staging.copies, staging.bytes] if staging is not None else [0, 0]


def suite(ctx, parts: str, dtypes: list) -> dict:
    """Everything one launch checks on this rank."""
    res = {"rank": ctx.rank, "backend": ctx.backend, "device": str(ctx.device),
           "device_count": torch.cuda.device_count() if ctx.device.type == "cuda" else 0}
    before = staging_counts(ctx)
    res["transport"] = transport_cases(ctx)
    after = staging_counts(ctx)
    res["staged_by_transport"] = [a - b for a, b in zip(after, before)]
    part = pyg_sar.load_partition(parts, ctx.rank)
    res["engine"] = dc.device_cases(part, ec.make_graph(), ctx.device, dtypes, ENGINE_LAYERS)
    res["staged_total"] = staging_counts(ctx)
    return res
