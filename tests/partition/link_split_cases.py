"""Rank side of tests/partition/test_link_split.py (one launch per P runs every case).

Every rank makes the same RandomLinkSplit of Cora and reports: whether ``pyg_sar.distribute``
of the triple gives the parts ``load_link_split`` reads from a ``partition_graph`` folder of
the same triple; whether ``pyg_sar.link.to_new_ids`` maps the input split's pairs (original
ids) to the loaded ``edge_label_index`` and each rank's ``node_ids`` to its own rows; what an
out-of-range id raises; and, per split, the relative error of a converted GCN and GraphSAGE
forward on that split's graph against PyG on that split's ``edge_index`` (float64).
"""
from __future__ import annotations

import copy

import torch
from torch_geometric.nn import GCNConv, SAGEConv

import pyg_sar
from pyg_sar.datasets.registry import load_dataset
from pyg_sar.partition.link_split import load_link_split, random_link_split
from pyg_sar.testing import error_of
from tests.closeness import rel_error

SPLITS = ("train", "val", "test")


def make_triple(disjoint: float) -> tuple:
    return random_link_split(load_dataset("cora"), 0.1, 0.1, seed=5,
                             disjoint_train_ratio=disjoint, add_negative_train_samples=True)


def _same(a, b) -> bool:
    ga, gb = a.edge_index, b.edge_index
    return (torch.equal(a.x, b.x) and torch.equal(a.node_ids, b.node_ids)
            and list(ga.node_offsets) == list(gb.node_offsets)
            and torch.equal(a.global_edge_index(), b.global_edge_index())
            and all(torch.equal(a[k], b[k])
                    for k in ("edge_label_index", "edge_label", "edge_label_ids")))


def suite(ctx, folders: dict) -> dict:
    out = {}
    for disjoint, folder in folders.items():
        triple = make_triple(float(disjoint))
        loaded = load_link_split(folder, ctx.rank, world_size=ctx.world_size, context=ctx)
        dist = pyg_sar.distribute(triple, method="metis", seed=0, context=ctx)
        res = {"distribute_equals_load": [_same(a, b) for a, b in zip(dist, loaded)],
               "val_shares_train_graph": dist[0].edge_index is dist[1].edge_index}
        # original -> new ids: the loaded pairs, and every rank's own rows
        res["to_new_ids_pairs"] = [
            torch.equal(pyg_sar.link.to_new_ids(p, ref.edge_label_index[:, p.edge_label_ids]),
                        p.edge_label_index) for p, ref in zip(dist, triple)]
        g = dist[2].edge_index
        lo = g.node_offsets[g.rank]
        res["to_new_ids_rows"] = torch.equal(
            pyg_sar.link.to_new_ids(dist[2], dist[2].node_ids),
            torch.arange(lo, lo + g.num_nodes))
        bad = torch.tensor([0, triple[0].num_nodes + 7]) if ctx.rank == 0 else \
            torch.zeros(0, dtype=torch.long)
        res["out_of_range"] = error_of(lambda p=dist[0], b=bad: pyg_sar.link.to_new_ids(p, b))
        # each split's graph is exactly its edge_index: a GCN and a SAGE forward per split
        torch.manual_seed(0)
        models = {"gcn": GCNConv(triple[0].num_features, 8).double(),
                  "sage": SAGEConv(triple[0].num_features, 8).double()}
        errors = {}
        for name, model in models.items():
            conv = pyg_sar.convert(copy.deepcopy(model))
            for split, part, ref in zip(SPLITS, dist, triple):
                want = model(ref.x.double(), ref.edge_index)[part.node_ids]
                errors[f"{name}/{split}"] = rel_error(conv(part.x.double(), part.edge_index), want)
        res["forward_rel_err"] = errors
        out[disjoint] = res
    return out
