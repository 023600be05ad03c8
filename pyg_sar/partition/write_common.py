"""What every partition writer shares (homogeneous :mod:`pyg_sar.partition.writer`,
heterogeneous :mod:`pyg_sar.partition.writer`, streaming
:mod:`pyg_sar.partition.stream`): the argument checks, a tensor's ``meta.json`` entry, the
number of classes recorded."""
from __future__ import annotations

from typing import Any

import numpy as np
from torch import Tensor

from pyg_sar.partition.assign import METHODS, check_balance_arg
from pyg_sar.partition.finite import check_policy
from pyg_sar.partition.storage import dtype_name, storage_dtype_name


def num_classes(data: Any, y: Tensor | None) -> int | None:
    given = getattr(data, "num_classes", None)
    if isinstance(given, int) and not isinstance(given, bool):
        return given
    if y is None or y.numel() == 0:
        return None
    if y.dim() == 1 and not y.is_floating_point():
        return int(y.max().clamp(min=-1)) + 1  # labels < 0 mark unlabelled nodes
    if y.dim() == 2:
        return int(y.size(1))
    return None


def key_spec(value: Tensor) -> dict:
    return {"dtype": dtype_name(value.dtype), "storage_dtype": storage_dtype_name(value.dtype),
            "shape": list(value.shape)}


def checked_arguments(num_parts: Any, method: str, seed: Any, on_nonfinite: str,
                      balance: Any = None, ubvec: Any = None) -> tuple[int, int]:
    """``(num_parts, seed)`` as ints, after checking the arguments every partition writer
    (homogeneous or heterogeneous) takes; a ValueError names the offending value."""
    check_policy(on_nonfinite, "partition_graph")
    if method not in METHODS:
        raise ValueError(f"unknown partition method {method!r} (expected one of {METHODS})")
    check_balance_arg(balance)
    if ubvec is not None:
        from pyg_sar.partition.metis import check_ubvec
        check_ubvec(ubvec)
        if method != "metis":
            raise ValueError(f"ubvec applies to method='metis' only (got ubvec={ubvec!r} "
                             f"with method={method!r})")
    if not isinstance(num_parts, (int, np.integer)) or isinstance(num_parts, bool):
        raise ValueError(f"num_parts must be an integer (got {num_parts!r})")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise ValueError(f"seed must be an integer (got {seed!r})")
    return int(num_parts), int(seed)
