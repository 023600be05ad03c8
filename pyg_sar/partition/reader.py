"""Reading the files of one partition that its ``meta.json`` lists (checksum, dtype and shape
checked), shared by the homogeneous (:mod:`pyg_sar.partition.loader`) and heterogeneous
(:mod:`pyg_sar.partition.hetero`) loaders."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from pyg_sar.partition import format as fmt
from pyg_sar.partition.storage import load_npy


class PartitionReader:
    """Reads meta-listed files of one partition, checking checksum, dtype and shape."""

    def __init__(self, root: Path, meta: dict) -> None:
        self.root = root
        self.files = meta["files"]

    def __call__(self, rel: str, shape: tuple, dtype: str | np.dtype = "int64"
                 ) -> np.ndarray:
        digest = self.files.get(rel)
        if digest is None:
            raise fmt.MetaError(f"malformed partition metadata '{self.root / fmt.META_FILE}': "
                                f"no checksum listed for '{rel}'")
        path = self.root / rel
        if not path.is_file():
            raise FileNotFoundError(f"partition file '{path}' is missing")
        array = load_npy(path, digest)
        if array.dtype != np.dtype(dtype) or array.shape != tuple(shape):
            raise ValueError(f"partition file '{path}' holds {array.dtype} {list(array.shape)}, "
                             f"expected {np.dtype(dtype)} {list(shape)}")
        return array


def check_range(array: np.ndarray, high: int, what: str, path: Path) -> None:
    if array.size and (int(array.min()) < 0 or int(array.max()) >= high):
        raise ValueError(f"partition file '{path}': {what} has values outside [0, {high})")
