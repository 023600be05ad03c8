"""WordNet 3.0 as a heterogeneous graph, built offline from the shipped
``pyg_sar/datasets/data/wordnet/wordnet30.npz`` (the file of :func:`~pyg_sar.datasets.wordnet`).

Why the second node type is ``"word"`` and not ``"lemma"``: the shipped file holds, per synset,
its lexicographer file (``y``), a binary bag of words of its definition over a 2,000-word
vocabulary (``x``) and WordNet's semantic pointers as untyped, symmetrised synset pairs
(``edge_index``). It holds no lemma (synonym) lists, no word strings and no pointer symbols, so
neither lemma nodes nor one edge type per WordNet relation can be built from it without new data.
The real second node type that the file does contain is the definition vocabulary: each of the
2,000 columns of ``x`` is a word, and each non-zero ``x[s, w]`` says that word ``w`` occurs in
the definition (gloss) of synset ``s``. Those become ``"word"`` nodes and ``defined_by`` edges.
Labels stay on synsets only, so nothing about the labels leaks into the graph's types.

The node type of the prediction target is :data:`WORDNET_TARGET` (``"synset"``).
Licence: ``data/wordnet/LICENSE-WordNet-3.0`` (Princeton University).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import HeteroData

from pyg_sar.datasets._split import random_split_masks
from pyg_sar.datasets.wordnet30 import WORDNET_PATH

WORDNET_TARGET = "synset"
"""The labelled node type of :func:`wordnet_hetero`."""

RELATED = ("synset", "related_to", "synset")
DEFINED_BY = ("synset", "defined_by", "word")
REV_DEFINED_BY = ("word", "rev_defined_by", "synset")
WORD_FEATURES = ("onehot", "none")


def wordnet_hetero(split_seed: int = 0, train_fraction: float = 0.6, val_fraction: float = 0.2,
                   word_features: str = "onehot", add_reverse: bool = True,
                   path: str | Path | None = None) -> HeteroData:
    """WordNet 3.0 with node types ``"synset"`` (117,659) and ``"word"`` (2,000).

    Edge types (``edge_index`` int64, sorted by (source, destination), no duplicates):

    * ``("synset", "related_to", "synset")``: WordNet's semantic pointers between synsets,
      exactly the 367,578 directed edges of the homogeneous :func:`~pyg_sar.datasets.wordnet`
      (already both directions, so it is its own reverse; the shipped data does not record
      which pointer, e.g. hypernym or antonym, an edge came from);
    * ``("synset", "defined_by", "word")``: word ``w`` occurs in synset ``s``'s definition
      (the non-zeros of the homogeneous ``x``; 475,749 edges);
    * ``("word", "rev_defined_by", "synset")`` (if ``add_reverse``): the same edges reversed,
      named as ``torch_geometric.transforms.ToUndirected`` names them, so that messages also
      reach synsets from words (do not apply ``ToUndirected`` again: it would add
      ``rev_rev_defined_by``).

    Node attributes:

    * ``synset``: ``x`` float32 ``[117659, 2000]`` (the homogeneous dataset's features), ``y``
      int64 (the lexicographer file, 45 classes, the homogeneous labels), ``train_mask`` /
      ``val_mask`` / ``test_mask`` (the homogeneous dataset's seeded split for the same
      ``split_seed`` and fractions, so the two datasets are comparable node for node);
    * ``word``: ``x`` float32 ``[2000, 2000]``, the identity (``word_features="onehot"``, a
      deterministic learnable-embedding stand-in: the file has no word vectors), or no ``x`` and
      only ``num_nodes`` (``word_features="none"``, as OGB-MAG leaves its non-paper types).

    Synset ids are the homogeneous dataset's node ids; word ids are ``x``'s column indices.

    Args:
        split_seed: seed of the random split (no split is published).
        train_fraction: fraction of synsets in ``train_mask``.
        val_fraction: fraction of synsets in ``val_mask``; the rest are test synsets.
        word_features: ``"onehot"`` (default) or ``"none"``.
        add_reverse: add ``("word", "rev_defined_by", "synset")`` (default ``True``).
        path: another ``.npz`` with the same arrays (default: the shipped file).

    Raises:
        ValueError: for an unknown ``word_features``, bad fractions, or a malformed ``.npz``.
    """
    if word_features not in WORD_FEATURES:
        raise ValueError(f"wordnet_hetero: word_features must be one of {WORD_FEATURES} "
                         f"(got {word_features!r})")
    path = Path(path) if path is not None else WORDNET_PATH
    # allow_pickle=False: an .npz with object arrays is refused instead of unpickled.
    with np.load(path, allow_pickle=False) as z:
        missing = {"x", "y", "edge_index"} - set(z.files)
        if missing:
            raise ValueError(f"wordnet_hetero: {path} lacks arrays {sorted(missing)}")
        x = z["x"].astype(np.float32, copy=False)
        y = z["y"].astype(np.int64, copy=False)
        edge_index = z["edge_index"].astype(np.int64, copy=False)
    if x.ndim != 2 or y.shape != (x.shape[0],) or edge_index.ndim != 2 \
            or edge_index.shape[0] != 2:
        raise ValueError(f"wordnet_hetero: inconsistent shapes in {path}: x {x.shape}, "
                         f"y {y.shape}, edge_index {edge_index.shape}")
    num_synsets, num_words = x.shape
    if edge_index.size and (edge_index.min() < 0 or edge_index.max() >= num_synsets):
        raise ValueError(f"wordnet_hetero: edge_index in {path} has ids in "
                         f"[{edge_index.min()}, {edge_index.max()}] but there are "
                         f"{num_synsets} synsets")

    # Row-major non-zeros: sorted by synset, then word (torch's nonzero is the fast one).
    defined_by = torch.from_numpy(x).nonzero().t().contiguous()
    if add_reverse:
        # A stable sort by word keeps the synsets ascending within each word.
        order = torch.sort(defined_by[1], stable=True).indices
        rev_defined_by = defined_by.flip(0)[:, order].contiguous()
    related = torch.from_numpy(edge_index)
    keys = related[0] * num_synsets + related[1]
    if keys.numel() > 1 and not bool((keys[1:] > keys[:-1]).all()):
        keys = torch.unique(keys)  # sorted and deduplicated (the shipped file already is)
        related = torch.stack([keys // num_synsets, keys % num_synsets])

    data = HeteroData()
    synset = data["synset"]
    synset.x = torch.from_numpy(x)
    synset.y = torch.from_numpy(y)
    synset.train_mask, synset.val_mask, synset.test_mask = random_split_masks(
        num_synsets, train_fraction, val_fraction, split_seed)
    if word_features == "onehot":
        data["word"].x = torch.eye(num_words, dtype=torch.float32)
    else:
        data["word"].num_nodes = num_words
    data[RELATED].edge_index = related
    data[DEFINED_BY].edge_index = defined_by
    if add_reverse:
        data[REV_DEFINED_BY].edge_index = rev_defined_by
    return data
