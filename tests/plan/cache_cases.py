"""Runs on every rank (``pyg_sar.testing.run_on_ranks``): the bytes of the index structures a
training step leaves on the graph (``DistGraph.cached``, ``Block.row``), which
``pyg_sar.plan``'s ``caches`` term predicts."""
from __future__ import annotations

import dataclasses

import torch


def _storages(obj, seen: dict, depth: int = 0) -> None:
    """Distinct tensor storages reachable from ``obj`` (tensors, containers, dataclasses,
    plain objects), ``data_ptr -> nbytes``."""
    if depth > 6 or obj is None or isinstance(obj, (int, float, str, bool, type)):
        return
    if isinstance(obj, torch.Tensor):
        seen[obj.untyped_storage().data_ptr()] = obj.untyped_storage().nbytes()
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _storages(v, seen, depth + 1)
    elif isinstance(obj, dict):
        for v in obj.values():
            _storages(v, seen, depth + 1)
    elif dataclasses.is_dataclass(obj) or hasattr(obj, "__dict__"):
        for k, v in vars(obj).items():
            if k not in ("_context", "graph", "meta", "path"):
                _storages(v, seen, depth + 1)


def step_caches(ctx, parts: str, hidden: int = 32) -> dict:
    """One SAGE training step (mode sar); the bytes of storages the graph holds after it that
    it did not hold before."""
    from torch_geometric.nn import GraphSAGE

    import pyg_sar
    part = pyg_sar.load_partition(parts, ctx.rank)
    graph = part.graph
    before: dict = {}
    _storages(graph, before)
    _storages(part, before)
    torch.manual_seed(0)
    model = GraphSAGE(part.x.shape[1], hidden, 3, int(part.meta["num_classes"]))
    pyg_sar.convert(model, pyg_sar.SARConfig(mode="sar"))
    out = model(part.x, graph)
    pyg_sar.nn.functional.cross_entropy(out, part.y, part.train_mask).backward()
    after: dict = {}
    _storages(graph, after)
    new = {k: v for k, v in after.items() if k not in before}
    return {"rank": ctx.rank, "cache_bytes": sum(new.values()),
            "num_edges": part.num_edges}
