"""``load_dataset(name)``: every built-in dataset by name, for the CLIs and the benchmarks."""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from torch_geometric.data import Data, HeteroData

from pyg_sar.datasets.hetero_mag import mag_like
from pyg_sar.datasets.hetero_wordnet import wordnet_hetero
from pyg_sar.datasets.ogb import ogb_node_dataset
from pyg_sar.datasets.planetoid import citeseer, cora
from pyg_sar.datasets.reduced import svd_features
from pyg_sar.datasets.synthetic_rmat import rmat
from pyg_sar.datasets.synthetic_sbm import sbm_dense, sbm_sparse
from pyg_sar.datasets.wordnet30 import wordnet
from pyg_sar.names import HETERO_DATASETS as HETERO_NAMES
from pyg_sar.names import is_hetero_dataset, is_known_dataset


def _rmat_default(num_nodes: int = 100_000, num_edges: int = 1_000_000, **kwargs: Any) -> Data:
    return rmat(num_nodes, num_edges, **kwargs)


# name -> (builder, takes the cache root)
_BUILDERS: dict[str, tuple[Callable[..., Data | HeteroData], bool]] = {
    "cora": (cora, True),
    "citeseer": (citeseer, True),
    "wordnet": (wordnet, False),
    "sbm": (sbm_sparse, False),
    "sbm-sparse": (sbm_sparse, False),
    "sbm-dense": (sbm_dense, False),
    "rmat": (_rmat_default, False),
    # Heterogeneous (HeteroData):
    "wordnet-hetero": (wordnet_hetero, False),
    "mag-like": (mag_like, False),
}

KNOWN_NAMES = (*_BUILDERS, "ogb:<folder>")
__all__ = ["KNOWN_NAMES", "HETERO_NAMES", "is_known_dataset", "is_hetero_dataset",
           "load_dataset"]


def load_dataset(name: str = "cora", root: str | os.PathLike | None = None,
                 svd_dim: int | None = None, **kwargs: Any) -> Data | HeteroData:
    """Load a built-in dataset by name.

    Args:
        name: ``"cora"`` (default), ``"citeseer"``, ``"wordnet"``, ``"sbm"`` (= ``"sbm-sparse"``),
            ``"sbm-dense"``, ``"sbm-sparse"``, ``"rmat"`` (100k nodes, 1M requested edges unless
            ``num_nodes`` / ``num_edges`` are given), ``"ogb:<folder>"`` (an OGB
            node-property dataset in a local folder, homogeneous or in ogbn-mag's
            heterogeneous layout), or the heterogeneous ``"wordnet-hetero"``
            (:func:`~pyg_sar.datasets.wordnet_hetero`) and ``"mag-like"``
            (:func:`~pyg_sar.datasets.mag_like`, 10,000 papers unless ``num_papers`` is
            given). Case-insensitive except the folder.
        root: writable cache folder for the datasets that need one (Cora, CiteSeer); the others
            ignore it.
        svd_dim: if given, ``x`` is replaced by its ``svd_dim`` standardised truncated-SVD
            components (:func:`~pyg_sar.datasets.reduced.svd_features`, seed 0); homogeneous
            datasets only.
        **kwargs: passed to the dataset's function (:func:`~pyg_sar.datasets.sbm`,
            :func:`~pyg_sar.datasets.rmat`, :func:`~pyg_sar.datasets.wordnet`, ...).

    Every homogeneous result is a ``Data`` with ``x`` (float32), ``y`` (int64),
    ``edge_index`` (int64) and boolean ``train_mask`` / ``val_mask`` / ``test_mask``; the
    heterogeneous ones are ``HeteroData`` with those on their labelled node type
    (:func:`is_hetero_dataset` tells which names give one).

    Raises:
        ValueError: for an unknown name (the message lists the known ones), or ``svd_dim`` on
            a heterogeneous dataset or out of range.
    """
    if svd_dim is not None and is_hetero_dataset(name):  # refused before any loading
        raise ValueError(f"load_dataset: svd_dim={svd_dim!r} needs a homogeneous dataset "
                         f"({name!r} is heterogeneous)")
    data = _load(name, root, **kwargs)
    if svd_dim is None:
        return data
    if isinstance(data, HeteroData):
        raise ValueError(f"load_dataset: svd_dim={svd_dim!r} needs a homogeneous dataset "
                         f"({name!r} is heterogeneous)")
    return svd_features(data, svd_dim)


def _load(name: str, root: str | os.PathLike | None, **kwargs: Any) -> Data | HeteroData:
    if not isinstance(name, str):
        raise ValueError(f"load_dataset: name must be a string (got {type(name).__name__})")
    if name[:4].lower() == "ogb:":
        folder = name[4:]
        if not folder:
            raise ValueError("load_dataset: 'ogb:' needs a folder, e.g. 'ogb:data/ogbn_arxiv'")
        return ogb_node_dataset(folder, **kwargs)
    entry = _BUILDERS.get(name.lower())
    if entry is None:
        raise ValueError(f"load_dataset: unknown dataset {name!r}; known: "
                         f"{', '.join(KNOWN_NAMES)}")
    builder, takes_root = entry
    return builder(root=root, **kwargs) if takes_root else builder(**kwargs)
