"""Rank-side cases of the distributed sampling tests (run through pyg_sar.testing.run_on_ranks):
every rank samples its minibatches of the epoch with each layout and returns them in original
ids, for the test to compare with single-process sampling."""
from __future__ import annotations

import pyg_sar
from pyg_sar.sampling import BulkLadiesLoader, BulkNeighborLoader

CASES = {
    "sage_1d": dict(kind="sage", replication=1, replicate_graph=False),
    "sage_15d": dict(kind="sage", replication=2, replicate_graph=False),
    "sage_replicated": dict(kind="sage", replication=1, replicate_graph=True),
    "ladies_1d": dict(kind="ladies", replication=1, replicate_graph=False),
    "ladies_15d": dict(kind="ladies", replication=2, replicate_graph=False),
    "ladies_replicated": dict(kind="ladies", replication=1, replicate_graph=True),
}


def make_loader(kind: str, data, sizes, batch_size: int, bulk: int, seed: int, **kw):
    cls = BulkNeighborLoader if kind == "sage" else BulkLadiesLoader
    return cls(data, sizes[kind], batch_size=batch_size, bulk=bulk, seed=seed, **kw)


def suite(ctx, parts: str, sizes: dict, batch_size: int, bulk: int, seed: int,
          epochs: int) -> dict:
    part = pyg_sar.load_partition(parts, ctx.rank)
    out = {}
    for name, case in CASES.items():
        if case["replication"] == 2 and ctx.world_size % 2:
            continue
        loader = make_loader(case["kind"], part, sizes, batch_size, bulk, seed,
                             input_nodes=part.train_mask, replication=case["replication"],
                             replicate_graph=case["replicate_graph"], context=ctx)
        batches = []
        for epoch in range(epochs):
            for i, batch in enumerate(loader):
                batches.append(dict(
                    epoch=epoch, index=ctx.rank + i * ctx.world_size,
                    n_id=batch.n_id.tolist(), edge_index=batch.edge_index.tolist(),
                    e_id=batch.e_id.tolist(), x=batch.x.tolist(), y=batch.y.tolist(),
                    batch_size=batch.batch_size, num_sampled_nodes=batch.num_sampled_nodes,
                    num_sampled_edges=batch.num_sampled_edges))
        out[name] = dict(batches=batches, steps=loader.steps_per_epoch, mine=len(loader))
    return out
