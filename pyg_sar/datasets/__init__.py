"""Built-in datasets, all local and deterministic: Cora and CiteSeer (shipped Planetoid raw
files, read by PyG), WordNet 3.0 (shipped), stochastic block models and R-MAT graphs (generated
by seed), a validator for any PyG ``Data``, and a reader for OGB node-property folders.

Nothing is downloaded at run time. See ``pyg_sar/datasets/data/README.md`` for the sources and
licences of the shipped files.
"""
from pyg_sar.datasets._split import random_split_masks
from pyg_sar.datasets.ogb import ogb_node_dataset
from pyg_sar.datasets.planetoid import Planetoid, citeseer, cora, default_cache_dir
from pyg_sar.datasets.registry import KNOWN_NAMES, load_dataset
from pyg_sar.datasets.synthetic_rmat import rmat
from pyg_sar.datasets.synthetic_sbm import sbm, sbm_dense, sbm_sparse
from pyg_sar.datasets.validate import from_pyg
from pyg_sar.datasets.wordnet30 import wordnet

__all__ = [
    "KNOWN_NAMES",
    "Planetoid",
    "citeseer",
    "cora",
    "default_cache_dir",
    "from_pyg",
    "load_dataset",
    "ogb_node_dataset",
    "random_split_masks",
    "rmat",
    "sbm",
    "sbm_dense",
    "sbm_sparse",
    "wordnet",
]
