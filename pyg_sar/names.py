"""The names the command-line tools accept (datasets, partition methods, codecs, ...),
importable without torch or PyG, so that ``python -m pyg_sar.train --help`` and a mistyped
flag answer before torch is imported.

Each tuple mirrors the table of the module that implements it (named beside it);
``tests/train/test_train_args.py`` checks that they agree.
"""
from __future__ import annotations

from pathlib import Path

# pyg_sar.datasets.registry (the builders' keys)
DATASETS = ("cora", "citeseer", "wordnet", "sbm", "sbm-sparse", "sbm-dense", "rmat",
            "wordnet-hetero", "mag-like")
HETERO_DATASETS = ("wordnet-hetero", "mag-like")
KNOWN_DATASET_NAMES = (*DATASETS, "ogb:<folder>")

# pyg_sar.partition.assign
PARTITION_METHODS = ("metis", "random", "contiguous")
BALANCES = ("nodes", "edges")
EDGE_BALANCE_MIN_PARTS = 4

# pyg_sar.train_common.DTYPES, the models of pyg_sar.train_common.build_model
DTYPES = ("float32", "float64")
MODELS = ("gcn", "sage", "gin", "gat")

# pyg_sar.sampling.train_loop.SAMPLERS, pyg_sar.train_link.NEG_METHODS
SAMPLERS = ("sage", "ladies")
NEG_METHODS = ("uniform", "degree")

# pyg_sar.compression: factory.CODEC_NAMES, factory.SCHEDULE_NAMES, packing.BITS,
# interface.ERROR_FEEDBACK, interface.COMPRESS_DIRECTIONS
CODECS = ("truncate", "subset", "quantize")
SCHEDULES = ("fixed", "linear", "exponential", "step", "fraction", "stages")
BITS = (1, 2, 4, 8, 16)
ERROR_FEEDBACK = ("none", "rows", "grads", "both")
COMPRESS_DIRECTIONS = ("both", "rows", "grads")


def is_known_dataset(name: str) -> bool:
    """Whether :func:`pyg_sar.datasets.load_dataset` knows ``name`` (checks the name only,
    loads nothing)."""
    if not isinstance(name, str):
        return False
    if name[:4].lower() == "ogb:":
        return bool(name[4:])
    return name.lower() in DATASETS


def is_hetero_dataset(name: str) -> bool:
    """Whether the built-in ``name`` gives a ``HeteroData`` (``"ogb:<folder>"``: whether the
    folder is in the heterogeneous layout; loads nothing)."""
    if not isinstance(name, str):
        return False
    if name[:4].lower() == "ogb:":
        return (Path(name[4:]).expanduser() / "raw" / "num-node-dict.csv.gz").is_file()
    return name.lower() in HETERO_DATASETS
