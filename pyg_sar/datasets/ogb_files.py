"""Readers of the files of an OGB folder in OGB's raw CSV layout (gzipped CSV, the split
folders), shared by the homogeneous (:mod:`pyg_sar.datasets.ogb`) and heterogeneous
(:mod:`pyg_sar.datasets.hetero_ogb`) readers."""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np


def read_csv(path: Path, dtype: type, ndmin: int) -> np.ndarray:
    if not path.is_file():
        raise ValueError(f"ogb: {path} is missing")
    with gzip.open(path, "rt") as f:
        try:
            return np.loadtxt(f, delimiter=",", dtype=dtype, ndmin=ndmin)
        except ValueError as e:
            raise ValueError(f"ogb: cannot parse {path}: {e}") from e


def single_count(path: Path) -> int:
    counts = read_csv(path, np.int64, 1)
    if counts.size != 1:
        raise ValueError(f"ogb: {path} lists {counts.size} graphs; a node-property dataset has "
                         f"exactly one")
    return int(counts[0])


def find_split_dir(folder: Path, split_type: str | None) -> Path:
    split_root = folder / "split"
    if split_type is not None:
        path = split_root / split_type
        if not path.is_dir():
            raise ValueError(f"ogb: split folder {path} is missing")
        return path
    kinds = sorted(p.name for p in split_root.iterdir() if p.is_dir()) \
        if split_root.is_dir() else []
    if len(kinds) != 1:
        raise ValueError(f"ogb: expected exactly one split type under {split_root} (found "
                         f"{kinds}); pass split_type")
    return split_root / kinds[0]
