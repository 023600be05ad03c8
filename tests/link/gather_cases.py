"""Rank side of tests/link/test_gather.py.

Every rank builds the same global data (seeded): ``z_global`` split into uneven contiguous
slices (rank 1 holds no rows where P >= 3), and one index per rank (random order, repeats,
rank 2 empty where P >= 3). The distributed gather's output and the gradient of ``z`` are
compared with the single-process ``z_global[index]`` (the oracle: the gradient of
``sum_r (z_global[index_r] * w_r).sum()``), the traffic ledger with the bytes the requests
imply, and bad input on one rank must raise ``ValueError`` on every rank.

``ids_cases``: on the random partition (new ids differ from original ids), ``ids="original"``
returns the rows of those original nodes (``z`` encodes each row's original id), ``ids="new"``
the rows of new ids, and ids left out where they may differ raise on every rank.
"""
from __future__ import annotations

import traceback

import torch

from pyg_sar.link.gather import gather
from tests.closeness import rel_error

F64 = torch.float64
N = 41


def offsets(n: int, world: int, seed: int) -> list[int]:
    g = torch.Generator().manual_seed(300 + seed)
    weights = torch.rand(world, generator=g, dtype=F64) + 0.2
    if world >= 3:
        weights[1] = 0.0
    cuts = (weights.cumsum(0) / weights.sum() * n).round().long().tolist()
    return [0] + cuts[:-1] + [n]


def indices(n: int, world: int, seed: int) -> list[torch.Tensor]:
    """One index per rank: random ids with repeats, in random order; rank 2 empty (P >= 3)."""
    g = torch.Generator().manual_seed(500 + seed)
    out = []
    for r in range(world):
        m = 0 if (world >= 3 and r == 2) else int(torch.randint(1, 3 * n, (1,), generator=g))
        idx = torch.randint(0, n, (m,), generator=g)
        if m > 3:
            idx[1] = idx[0]  # a certain repeat
        out.append(idx)
    return out


def exact_cases(ctx, graph) -> dict:
    """Forward and backward against the single-process gather, several shapes and offset
    sources; returns ``{case: [forward rel err, grad rel err]}``."""
    world, rank = ctx.world_size, ctx.rank
    res = {}
    for seed, shape in enumerate([(5,), (), (2, 3)]):
        off = offsets(N, world, seed)
        g = torch.Generator().manual_seed(700 + seed)
        zg = torch.randn((N, *shape), generator=g, dtype=F64)
        idx = indices(N, world, seed)
        ws = [torch.randn((i.numel(), *shape), generator=g, dtype=F64) for i in idx]
        zref = zg.clone().requires_grad_()
        sum((zref[i] * w).sum() for i, w in zip(idx, ws)).backward()
        for how in ("list", "tensor", "allgather"):
            z = zg[off[rank]:off[rank + 1]].clone().requires_grad_()
            kw = {"list": {"node_offsets": off},  # a plain layout: ids may be left out
                  "tensor": {"node_offsets": torch.tensor(off)},
                  "allgather": {"ids": "new"}}[how]
            out = gather(z, idx[rank], **kw)
            (out * ws[rank]).sum().backward()
            res[f"shape{list(shape)}/{how}"] = [
                rel_error(out.detach(), zg[idx[rank]]),
                rel_error(z.grad, zref.grad[off[rank]:off[rank + 1]])]
    # the offsets of a real partition: node_offsets=graph and context=graph
    off = graph.node_offsets
    n = off[-1]
    g = torch.Generator().manual_seed(900)
    zg = torch.randn(n, 4, generator=g, dtype=F64)
    idx = [torch.randint(0, n, (7 + 3 * r,), generator=g) for r in range(world)]
    ws = [torch.randn(i.numel(), 4, generator=g, dtype=F64) for i in idx]
    zref = zg.clone().requires_grad_()
    sum((zref[i] * w).sum() for i, w in zip(idx, ws)).backward()
    for how in ("graph_offsets", "graph_context"):
        z = zg[off[rank]:off[rank + 1]].clone().requires_grad_()
        kw = {"node_offsets": graph} if how == "graph_offsets" else {"context": graph}
        out = gather(z, idx[rank], ids="new", **kw)
        (out * ws[rank]).sum().backward()
        res[how] = [rel_error(out.detach(), zg[idx[rank]]),
                    rel_error(z.grad, zref.grad[off[rank]:off[rank + 1]])]
    # a second use of the output (gradients of both summed) and a z without grad
    off = offsets(N, world, 0)
    zg = torch.randn(N, 3, generator=g, dtype=F64)
    idx = indices(N, world, 1)
    zref = zg.clone().requires_grad_()
    sum((zref[i] ** 2).sum() + zref[i].sum() for i in idx).backward()
    z = zg[off[rank]:off[rank + 1]].clone().requires_grad_()
    out = gather(z, idx[rank], node_offsets=off)
    ((out ** 2).sum() + out.sum()).backward()
    res["nonlinear_loss"] = [rel_error(out.detach(), zg[idx[rank]]),
                             rel_error(z.grad, zref.grad[off[rank]:off[rank + 1]])]
    out = gather(zg[off[rank]:off[rank + 1]], idx[rank], node_offsets=off)
    res["no_grad_z"] = [rel_error(out, zg[idx[rank]]), 0.0 if not out.requires_grad else 1.0]
    return res


def dtype_cases(ctx) -> dict:
    """float32 / bfloat16 rows cross unchanged (a gather is a copy): forward and gradient
    equal exactly (the gradient: a single contribution per row, so no rounding)."""
    world, rank = ctx.world_size, ctx.rank
    off = offsets(N, world, 2)
    res = {}
    for dtype in (torch.float32, torch.bfloat16):
        zg = torch.randn(N, 6, generator=torch.Generator().manual_seed(11), dtype=F64).to(dtype)
        perm = torch.randperm(N, generator=torch.Generator().manual_seed(12))
        cuts = [N * r // world for r in range(world + 1)]
        mine = perm[cuts[rank]:cuts[rank + 1]]  # each id asked once over all ranks
        z = zg[off[rank]:off[rank + 1]].clone().requires_grad_()
        out = gather(z, mine, node_offsets=off)
        w = torch.arange(1, N + 1, dtype=dtype)[:, None].expand(N, 6)
        (out * w[mine]).sum().backward()
        res[str(dtype)] = [bool(out.dtype == dtype and torch.equal(out.detach(), zg[mine])),
                           bool(torch.equal(z.grad, w[off[rank]:off[rank + 1]]))]
    return res


def ledger_case(ctx) -> dict:
    """The ledger's bytes under the call's name equal what the requests imply."""
    world, rank = ctx.world_size, ctx.rank
    off = offsets(N, world, 0)
    idx = indices(N, world, 0)
    zg = torch.randn(N, 5, dtype=F64)
    row = 5 * 8
    owner = [torch.searchsorted(torch.tensor(off[1:]), torch.unique(i), right=True)
             for i in idx]
    asked = [[int((o == q).sum()) for q in range(world)] for o in owner]  # asked[r][q]
    sent_ids = sum(asked[r][q] for q in range(world) if q != rank for r in [rank])
    served = sum(asked[r][rank] for r in range(world) if r != rank)
    ctx.comm.traffic.reset()
    z = zg[off[rank]:off[rank + 1]].clone().requires_grad_()
    gather(z, idx[rank], node_offsets=off, name="pairs").sum().backward()
    led = ctx.comm.traffic.as_dict()
    want = {"rows": {"sent": 16 * (world - 1) + 8 * sent_ids + row * served,
                     "recv": 16 * (world - 1) + 8 * served + row * sent_ids},
            "grads": {"sent": row * sent_ids, "recv": row * served}}
    if world == 1:
        want = None
    return {"got": led.get("pairs"), "want": want}


def error_cases(ctx) -> dict:
    """Bad input on one rank (rank 0): ValueError on every rank, naming the value on rank 0."""
    world, rank = ctx.world_size, ctx.rank
    off = offsets(N, world, 0)
    z = torch.randn(off[rank + 1] - off[rank], 2, dtype=F64)
    good = torch.tensor([0, N - 1])
    bad = {"float_index": good.double(), "two_d_index": good[None, :],
           "id_too_large": torch.tensor([3, N + 5]), "negative_id": torch.tensor([-2]),
           "bad_offsets": None, "z_rows": None}
    out = {}
    for case, index in bad.items():
        zz, kw = z, {"node_offsets": off}
        if rank == 0:
            if case == "bad_offsets":
                index, kw = good, {"node_offsets": off[:-1]}
            elif case == "z_rows":
                index, zz = good, torch.randn(z.shape[0] + 1, 2, dtype=F64)
        else:
            index = good
        try:
            gather(zz, index, **kw)
            out[case] = None
        except ValueError as e:
            out[case] = str(e)
        except Exception:  # noqa: BLE001 - reported to the test
            out[case] = "WRONG: " + traceback.format_exc()
    return out


def value_error_message(fn) -> str | None:
    """The message of the ValueError ``fn()`` raises; None if it raises none; "WRONG: ..." for
    any other exception (also used by pair_ids_cases.py)."""
    try:
        fn()
    except ValueError as e:
        return str(e)
    except Exception:  # noqa: BLE001 - reported to the test
        return "WRONG: " + traceback.format_exc()
    return None


def ids_cases(ctx, part) -> dict:
    """``ids="original"`` / ``"new"`` on a real partition; ``z``'s rows hold their original
    ids (and 10x them), so a returned row names the node it belongs to."""
    world, rank = ctx.world_size, ctx.rank
    g = part.edge_index
    n = g.num_global_nodes
    everyone = torch.cat([torch.tensor(x, dtype=torch.long)
                          for x in ctx.comm.allgather_object(part.node_ids.tolist())]) \
        if ctx.comm is not None else part.node_ids  # new id -> original id
    z0 = torch.stack([part.node_ids, 10 * part.node_ids], 1).to(F64)
    gen = torch.Generator().manual_seed(40 + rank)
    m = 0 if (world >= 3 and rank == 2) else 9 + 4 * rank
    orig = torch.randint(0, n, (m,), generator=gen)
    if m > 3:
        orig[1] = orig[0]
    out = {"renumbered": any(ctx.comm.allgather_object(
        not torch.equal(part.node_ids, torch.arange(g.node_offsets[rank],
                                                   g.node_offsets[rank + 1])))
        if ctx.comm is not None else False)}
    all_orig = torch.cat([torch.tensor(x, dtype=torch.long)
                          for x in ctx.comm.allgather_object(orig.tolist())]) \
        if ctx.comm is not None else orig
    want_grad = torch.bincount(all_orig, minlength=n).to(F64)[part.node_ids]
    # ids="original": the graph from graph= (DistGraph or PartitionData), node_offsets=, context=
    for how, kw in (("graph", {"graph": g}), ("graph_part", {"graph": part}),
                    ("node_offsets", {"node_offsets": g}), ("context", {"context": g})):
        z = z0.clone().requires_grad_()
        rows = gather(z, orig, ids="original", **kw)
        rows.sum().backward()
        out[f"original/{how}"] = bool(torch.equal(rows.detach()[:, 0].long(), orig)
                                      and torch.equal(rows.detach()[:, 1].long(), 10 * orig)
                                      and torch.equal(z.grad[:, 0], want_grad))
    # ids="new": rows of new ids (whose original ids are everyone[new])
    new = torch.randint(0, n, (m,), generator=gen)
    for how, kw in (("node_offsets", {"node_offsets": g}), ("context", {"context": g}),
                    ("graph", {"graph": g}), ("plain", {})):
        rows = gather(z0, new, ids="new", **kw)
        out[f"new/{how}"] = bool(torch.equal(rows[:, 0].long(), everyone[new]))
    # original ids, ids left out: an error on every rank, never rows
    for how, kw in (("node_offsets", {"node_offsets": g}), ("context", {"context": g}),
                    ("graph", {"graph": g}), ("plain", {})):
        out[f"left_out/{how}"] = value_error_message(lambda kw=kw: gather(z0, orig, **kw))
    out["original_without_graph"] = value_error_message(lambda: gather(z0, orig, ids="original"))
    out["original_list_offsets"] = value_error_message(
        lambda: gather(z0, orig, ids="original", node_offsets=list(g.node_offsets)))
    out["bad_ids"] = value_error_message(lambda: gather(z0, orig, ids="old", node_offsets=g))
    bad = torch.tensor([0, n + 3]) if rank == 0 else orig
    out["original_out_of_range"] = value_error_message(
        lambda: gather(z0, bad, ids="original", graph=g))
    return out


def suite(ctx, parts: str) -> dict:
    from pyg_sar.partition import load_partition
    part = load_partition(parts, ctx.rank)
    graph = part.edge_index
    return {"exact": exact_cases(ctx, graph), "dtypes": dtype_cases(ctx),
            "ledger": ledger_case(ctx), "errors": error_cases(ctx),
            "ids": ids_cases(ctx, part)}
