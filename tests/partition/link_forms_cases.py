"""Rank side of tests/partition/test_link_split_forms.py: ``pyg_sar.distribute`` of every
homogeneous ``RandomLinkSplit`` form (one launch per P runs every form).

Every rank makes the same seeded split of Cora, distributes it and reports, per split and pair
set, its pairs mapped back to ORIGINAL ids (through every rank's ``node_ids``), their labels,
their positions in the input split (``*_ids``) and whether it owns every pair's source.
"""
from __future__ import annotations

import random

import numpy as np
import torch

import pyg_sar
from pyg_sar.datasets.registry import load_dataset

SPLITS = ("train", "val", "test")
PAIR_SETS = ("edge_label", "pos_edge_label", "neg_edge_label")
# name -> RandomLinkSplit keyword arguments (num_val / num_test / is_undirected apart)
FORMS = {
    # PyG's examples/autoencoder.py
    "split_labels": dict(split_labels=True, add_negative_train_samples=False),
    "split_labels_negatives": dict(split_labels=True, add_negative_train_samples=True,
                                   neg_sampling_ratio=2.0, disjoint_train_ratio=0.3),
    "mixed_no_train_negatives": dict(split_labels=False, add_negative_train_samples=False,
                                     neg_sampling_ratio=0.5),
    "mixed_directed": dict(split_labels=False, add_negative_train_samples=True,
                           disjoint_train_ratio=0.3, is_undirected=False),
}


def make_triple(form: str, seed: int = 0) -> tuple:
    """PyG's RandomLinkSplit of Cora in the form ``form``, its generators seeded."""
    import torch_geometric.transforms as T
    kwargs = dict(is_undirected=True, num_val=0.05, num_test=0.1)
    kwargs.update(FORMS[form])
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    return T.RandomLinkSplit(**kwargs)(load_dataset("cora"))


def suite(ctx, forms: list) -> dict:
    out = {}
    for form in forms:
        triple = make_triple(form)
        parts = pyg_sar.distribute(triple, method="metis", seed=0, context=ctx)
        part = parts[0]
        new_to_orig = torch.cat([torch.as_tensor(ids) for ids in
                                 (ctx.comm.allgather_object(part.node_ids.tolist())
                                  if ctx.comm is not None and ctx.world_size > 1
                                  else [part.node_ids.tolist()])])
        g = part.edge_index
        lo, hi = g.node_offsets[g.rank], g.node_offsets[g.rank + 1]
        res = {}
        for split, p in zip(SPLITS, parts):
            sets = {}
            for s in PAIR_SETS:
                if f"{s}_index" not in p:
                    continue
                index, label, ids = p[f"{s}_index"], p[s], p[f"{s}_ids"]
                index = index.as_subclass(torch.Tensor)  # plain new ids: a global id table
                sets[s] = {"pairs": new_to_orig[index].tolist(), "label": label.tolist(),
                           "ids": ids.tolist(),
                           "owns_sources": bool(((index[0] >= lo) & (index[0] < hi)).all()),
                           "dtype": str(label.dtype)}
            res[split] = sets
        out[form] = res
    return out
