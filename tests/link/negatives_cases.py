"""Rank side of tests/link/test_negatives.py, and the shared test graph.

Every rank loads its part of :func:`graph` partitioned over P ranks, takes an uneven slice of
the global keys (in a shuffled order; rank 2 none where P >= 3), draws its negatives with
:func:`pyg_sar.link.negative_sampling`, maps them to original ids with
:func:`pyg_sar.gather` on ``graph.node_ids`` and compares them with the columns of the same keys
in :func:`pyg_sar.link.reference_negative_sampling` on the whole graph (the oracle): for both
methods, with and without rejection of existing edges, with and without kept sources, with
several negatives per key and two epochs.
"""
from __future__ import annotations

import itertools
import traceback

import torch

from pyg_sar.link.gather import gather
from pyg_sar.link.negatives import negative_sampling, reference_negative_sampling

N, E, K = 60, 240, 50


def graph():
    """A directed graph with skewed in-degrees, a few isolated nodes and a self-loop."""
    from torch_geometric.data import Data
    g = torch.Generator().manual_seed(7)
    src = torch.randint(0, N - 3, (E,), generator=g)
    dst = (torch.rand(E, generator=g) ** 2 * (N - 3)).long()  # skewed towards low ids
    ei = torch.cat([torch.stack([src, dst]), torch.tensor([[5], [5]])], 1)
    return Data(edge_index=ei, num_nodes=N)


def key_slices(world: int) -> list[torch.Tensor]:
    perm = torch.randperm(K, generator=torch.Generator().manual_seed(8))
    cuts = [0, 7, 7, 30, K] if world == 4 else ([0, 20, 20, K] if world == 3 else [0, K])
    return [perm[cuts[r]:cuts[r + 1]] for r in range(world)]


def kept_sources() -> torch.Tensor:
    """Original source id per key (for the ``src`` cases)."""
    return torch.randint(0, N, (K,), generator=torch.Generator().manual_seed(9))


CASES = [dict(method=m, reject_existing=r, kept=k, num_neg=n, epoch=e)
         for m, r, k, (n, e) in itertools.product(("uniform", "degree"), (False, True),
                                                  (False, True), ((1, 0), (3, 1)))]


def case_name(c: dict) -> str:
    return (f"{c['method']}/reject={c['reject_existing']}/src={c['kept']}/"
            f"neg={c['num_neg']}/epoch={c['epoch']}")


def suite(ctx, parts: str) -> dict:
    from pyg_sar.partition import load_partition
    part = load_partition(parts, ctx.rank)
    g = part.edge_index
    world, rank = ctx.world_size, ctx.rank
    ei = graph().edge_index
    ids = torch.cat([torch.tensor(x, dtype=torch.long)
                     for x in ctx.comm.allgather_object(part.node_ids.tolist())])
    new_of = torch.empty(N, dtype=torch.long)
    new_of[ids] = torch.arange(N)
    keys = key_slices(world)[rank]
    srcs = kept_sources()
    out = {"equal": {}, "columns": {}}
    for c in CASES:
        kw = dict(seed=11, epoch=c["epoch"], num_neg=c["num_neg"], method=c["method"],
                  reject_existing=c["reject_existing"])
        neg = negative_sampling(g, keys, src=new_of[srcs[keys]] if c["kept"] else None, **kw)
        orig = gather(part.node_ids, neg.reshape(-1), ids="new", node_offsets=g).reshape(2, -1)
        ref = reference_negative_sampling(ei, torch.arange(K), num_nodes=N,
                                          src=srcs if c["kept"] else None, **kw)
        cols = (keys[:, None] * c["num_neg"] + torch.arange(c["num_neg"])).reshape(-1)
        out["equal"][case_name(c)] = bool(neg.shape == (2, keys.numel() * c["num_neg"])
                                          and torch.equal(orig, ref[:, cols]))
        out["columns"][case_name(c)] = [keys.tolist(), orig.tolist()]
    out["errors"] = error_cases(g, rank)
    return out


def error_cases(g, rank: int) -> dict:
    """Bad keys / src on rank 0 only: ValueError on every rank."""
    res = {}
    for case in ("float_keys", "negative_key", "src_out_of_range", "src_length"):
        keys, src = torch.arange(3), None
        if rank == 0:
            if case == "float_keys":
                keys = keys.double()
            elif case == "negative_key":
                keys = torch.tensor([0, -4])
            elif case == "src_out_of_range":
                src = torch.tensor([0, 1, N + 2])
            else:
                src = torch.tensor([0])
        try:
            negative_sampling(g, keys, seed=0, epoch=0, src=src)
            res[case] = None
        except ValueError as e:
            res[case] = str(e)
        except Exception:  # noqa: BLE001 - reported to the test
            res[case] = "WRONG: " + traceback.format_exc()
    return res
