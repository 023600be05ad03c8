"""One launch per P for tests/link/test_gather.py and tests/link/test_negatives.py: the rank side
runs the three suites (gather_cases, negatives_cases, pair_ids_cases) on one partition of
negatives_cases.graph; the test side launches once per session (:func:`launches`, cached in this
module, which the two test files load under one name with :func:`shared`)."""
from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORLD_SIZES = (1, 3, 4)
_NAME = "_pyg_sar_tests_link_pairs_cases"
_RESULTS: dict = {}


def suite(ctx, parts: str) -> dict:
    gather_cases = runpy.run_path(str(HERE / "gather_cases.py"))
    negatives_cases = runpy.run_path(str(HERE / "negatives_cases.py"))
    from pyg_sar.partition import load_partition
    pair_ids_cases = runpy.run_path(str(HERE / "pair_ids_cases.py"))
    return {"gather": gather_cases["suite"](ctx, parts),
            "negatives": negatives_cases["suite"](ctx, parts),
            "pair_ids": pair_ids_cases["suite"](ctx, load_partition(parts, ctx.rank))}


def launches(tmp_path_factory) -> dict[int, list[dict]]:
    """``{P: [result of each rank]}``, launched on the first call of the session."""
    if not _RESULTS:
        import pyg_sar
        from pyg_sar.testing import run_on_ranks
        graph = runpy.run_path(str(HERE / "negatives_cases.py"))["graph"]
        root = tmp_path_factory.mktemp("pairs")
        for p in WORLD_SIZES:
            pyg_sar.partition_graph(graph(), p, root / f"p{p}", method="random", seed=p)
            _RESULTS[p] = run_on_ranks(f"{__file__}:suite", p, timeout=300,
                                       kwargs={"parts": str(root / f"p{p}")})
    return _RESULTS


def suite_results(tmp_path_factory, name: str) -> dict[int, list[dict]]:
    """``{P: [rank's result of suite name]}`` ("gather", "negatives", "pair_ids"), from the
    session's one launch per P."""
    return {p: [r[name] for r in res] for p, res in launches(tmp_path_factory).items()}


def shared():
    """This module, loaded once per session under one name (so both test files share the
    launches)."""
    mod = sys.modules.get(_NAME)
    if mod is None:
        spec = importlib.util.spec_from_file_location(_NAME, __file__)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[_NAME] = mod
        spec.loader.exec_module(mod)
    return mod


def cuda_suite(ctx, parts: str) -> dict:
    """On ``ctx.device`` (a CUDA device): gather forward / backward and the negatives equal the
    CPU results (the communicator stages the CUDA tensors)."""
    import torch

    from pyg_sar.link.gather import gather
    from pyg_sar.link.negatives import negative_sampling
    from pyg_sar.partition import load_partition
    dev = ctx.device
    part = load_partition(parts, ctx.rank)
    g = part.edge_index
    off, rank = g.node_offsets, ctx.rank
    gen = torch.Generator().manual_seed(3)
    zg = torch.randn(off[-1], 4, generator=gen, dtype=torch.float64)
    idx = torch.randint(0, off[-1], (20 + 5 * rank,), generator=gen)
    res = {}
    for where in ("cpu", dev):
        z = zg[off[rank]:off[rank + 1]].to(where).requires_grad_()
        out = gather(z, idx.to(where), ids="new", node_offsets=g)
        (out * out).sum().backward()
        res[str(where)] = [out.detach().cpu(), z.grad.cpu()]
    keys = torch.arange(rank, 40, ctx.world_size)
    negs = [negative_sampling(gr, keys.to(gr.device), seed=1, epoch=2, method=m,
                              reject_existing=True).cpu()
            for gr in (g, g.to(dev)) for m in ("uniform", "degree")]
    cpu, gpu = res["cpu"], res[str(dev)]
    return {"device": str(dev), "out_equal": bool(torch.equal(cpu[0], gpu[0])),
            "grad_rel": float((cpu[1] - gpu[1]).abs().max() / cpu[1].abs().max().clamp_min(1e-300)),
            "neg_equal": bool(torch.equal(negs[0], negs[2]) and torch.equal(negs[1], negs[3]))}
