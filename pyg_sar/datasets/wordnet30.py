"""The WordNet 3.0 sense graph shipped in ``pyg_sar/datasets/data/wordnet/wordnet30.npz``.

Nodes are synsets, edges WordNet's semantic pointers (both directions, deduplicated, no
self-loops), labels the synset's lexicographer file (45 classes), features a binary bag of words
of the synset's definition. Licence: ``data/wordnet/LICENSE-WordNet-3.0`` (Princeton University).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data

from pyg_sar.datasets._split import random_split_masks

WORDNET_PATH = Path(__file__).resolve().parent / "data" / "wordnet" / "wordnet30.npz"


def wordnet(split_seed: int = 0, train_fraction: float = 0.6, val_fraction: float = 0.2,
            path: str | Path | None = None) -> Data:
    """WordNet 3.0: 117,659 nodes, 367,578 directed edges, 2,000 features, 45 classes.

    No split is published, so the masks are a seeded random split (60/20/20 by default).

    Args:
        split_seed: seed of the random split.
        train_fraction: fraction of nodes in ``train_mask``.
        val_fraction: fraction of nodes in ``val_mask``; the rest are test nodes.
        path: another ``.npz`` with the same arrays (default: the shipped file).
    """
    path = Path(path) if path is not None else WORDNET_PATH
    # allow_pickle=False: an .npz with object arrays is refused instead of unpickled.
    with np.load(path, allow_pickle=False) as z:
        missing = {"x", "y", "edge_index"} - set(z.files)
        if missing:
            raise ValueError(f"wordnet: {path} lacks arrays {sorted(missing)}")
        x = torch.from_numpy(z["x"].astype(np.float32, copy=False))
        y = torch.from_numpy(z["y"].astype(np.int64, copy=False))
        edge_index = torch.from_numpy(z["edge_index"].astype(np.int64, copy=False))
    num_nodes = x.size(0)
    if y.shape != (num_nodes,) or edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"wordnet: inconsistent shapes in {path}: x {tuple(x.shape)}, "
                         f"y {tuple(y.shape)}, edge_index {tuple(edge_index.shape)}")
    train, val, test = random_split_masks(num_nodes, train_fraction, val_fraction, split_seed)
    return Data(x=x, y=y, edge_index=edge_index, train_mask=train, val_mask=val, test_mask=test)
