"""Rank-side cases of the ``pyg_sar.distribute`` tests (many cases, one launch).

Every rank builds the same in-memory graph, calls ``distribute`` and reports what it got: the
part compared with the one ``partition_graph`` + ``load_partition`` give offline, a converted
model's output against single-process PyG, the errors every rank sees for bad input, and the
temporary folders left behind.
"""
from __future__ import annotations

import copy
import os
import tempfile

import torch
import torch_geometric.transforms as T
from torch_geometric.data import Data
from torch_geometric.nn import GCN, GCN2Conv

import pyg_sar
from pyg_sar.datasets import sbm


def make_data() -> Data:
    data = sbm(num_nodes=90, num_classes=3, avg_degree=5.0, num_features=7, seed=4)
    data.x = data.x.double()
    return T.NormalizeFeatures()(data)


def _error(fn) -> dict:
    try:
        fn()
    except Exception as err:  # noqa: BLE001 - reported to the test
        return {"type": type(err).__name__, "message": str(err)}
    return {"type": None, "message": ""}


def _leftovers() -> list[str]:
    return sorted(n for n in os.listdir(tempfile.gettempdir()) if n.startswith("pyg_sar_dist"))


def suite(ctx, offline: str, method: str = "metis") -> dict:
    out: dict = {}
    data = make_data()
    # 1. errors reach every rank, and later calls still work
    bad = copy.copy(data)
    bad.edge_index = data.edge_index.clone()
    bad.edge_index[0, 3] = 1000
    out["bad_edge_index"] = _error(lambda: pyg_sar.distribute(bad, method=method))
    out["bad_num_parts"] = _error(lambda: pyg_sar.distribute(data, ctx.world_size + 1))
    out["bad_method"] = _error(lambda: pyg_sar.distribute(data, method="nope"))

    # 2. the part equals the offline one (same method and seed), checksums included
    part = pyg_sar.distribute(data, method=method, seed=0)
    ref = pyg_sar.load_partition(offline, ctx.rank)
    out["type"] = type(part).__name__
    out["same_fingerprint"] = part.fingerprint == ref.fingerprint
    out["same_tensors"] = all(torch.equal(part[k], ref[k]) for k in
                              ("x", "y", "train_mask", "val_mask", "test_mask", "node_ids",
                               "edge_ids", "recv_node_ids"))
    out["same_edges"] = torch.equal(part.global_edge_index(), ref.global_edge_index())
    out["path"] = None if part.path is None else str(part.path)
    out["bound"] = part.graph.context is ctx

    # 3. a converted model on the distributed part equals PyG on the whole graph
    torch.manual_seed(0)
    model = GCN(7, 8, num_layers=2, out_channels=3).double()
    dist = pyg_sar.convert(copy.deepcopy(model))
    want = model(data.x, data.edge_index)[part.node_ids]
    got = dist(part.x, part.edge_index)
    out["gcn_error"] = float((got - want).abs().max())

    # 4. a graph with values (gcn2_cora's preprocessing) travels too
    valued = make_data()
    valued.edge_weight = torch.rand(valued.num_edges, generator=torch.Generator().manual_seed(1),
                                    dtype=torch.float64) + 0.5
    valued = T.Compose([T.GCNNorm(), T.ToSparseTensor()])(valued)
    vpart = pyg_sar.distribute(valued)
    conv = GCN2Conv(7, 0.1, 0.5, 1, normalize=False).double()
    dconv = pyg_sar.convert(copy.deepcopy(conv))
    want = conv(valued.x, valued.x, valued.adj_t)[vpart.node_ids]
    out["gcn2_error"] = float((dconv(vpart.x, vpart.x, vpart.adj_t) - want).abs().max())
    out["has_values"] = vpart.adj_t.edge_values is not None

    # 5. pair sets of a plain Data (RelLinkPredDataset's layout): the pairs whose source the rank
    #    owns, in new ids, as PairIds; aligned rows; every pair on exactly one rank
    from pyg_sar.link.pair_ids import PairIds
    gen = torch.Generator().manual_seed(2)
    kg = make_data()
    kg.train_edge_index = torch.randint(0, kg.num_nodes, (2, 57), generator=gen)
    kg.train_edge_type = torch.randint(0, 5, (57,), generator=gen)
    kpart = pyg_sar.distribute(kg, method=method)
    ids = kpart.train_edge_ids
    z = kpart.node_ids.double()[:, None]  # each row names its node's original id
    ends = z[kpart.train_edge_index][..., 0].long()
    every = sorted(i for r in ctx.comm.allgather_object(ids.tolist()) for i in r)
    out["pair_sets"] = {
        "pairs": isinstance(kpart.train_edge_index, PairIds),
        "ends": torch.equal(ends, kg.train_edge_index[:, ids]),
        "aligned": torch.equal(kpart.train_edge_type, kg.train_edge_type[ids]),
        "sources_owned": bool(torch.isin(kg.train_edge_index[0, ids], kpart.node_ids).all()),
        "each_once": every == list(range(57)),
        "graph_nodes": kpart.edge_index.num_global_nodes == kg.num_nodes,
    }

    ctx.comm.barrier()
    out["leftovers"] = _leftovers()
    return out
