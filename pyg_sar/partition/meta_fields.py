"""Checks of the fields of a partition's ``meta.json``, shared by the homogeneous
(:mod:`pyg_sar.partition.format`) and heterogeneous (:mod:`pyg_sar.partition.format`)
validators."""
from __future__ import annotations

import re
from typing import Any

import numpy as np
import torch

from pyg_sar.partition.storage import parse_dtype

KEY_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class MetaError(ValueError):
    """``meta.json`` is malformed or from an unsupported format version."""


def fail(path: Any, msg: str) -> MetaError:
    return MetaError(f"malformed partition metadata '{path}': {msg}")


def int_field(meta: dict, key: str, path: Any, minimum: int = 0) -> int:
    value = meta.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise fail(path, f"'{key}' must be an integer >= {minimum} (got {value!r})")
    return value


def int_list(value: Any, length: int, what: str, path: Any) -> list[int]:
    if (not isinstance(value, list) or len(value) != length
            or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                       for v in value)):
        raise fail(path, f"'{what}' must be a list of {length} non-negative integers "
                          f"(got {value!r:.200})")
    return value


def tensor_keys(meta: dict, name: str, rows: int, path: Any) -> None:
    keys = meta.get(name)
    if not isinstance(keys, dict):
        raise fail(path, f"'{name}' must be an object (got {keys!r:.200})")
    for key, spec in keys.items():
        if not KEY_PATTERN.fullmatch(key):
            raise fail(path, f"invalid tensor key {key!r} in '{name}'")
        if not isinstance(spec, dict) or not isinstance(spec.get("shape"), list):
            raise fail(path, f"'{name}.{key}' needs 'dtype', 'storage_dtype' and 'shape'")
        if not isinstance(spec.get("storage_dtype"), str):
            raise fail(path, f"'{name}.{key}.storage_dtype' must be a string")
        try:
            dtype = parse_dtype(spec.get("dtype"))
            storage = np.dtype(spec.get("storage_dtype"))
        except (TypeError, ValueError) as err:
            raise fail(path, f"'{name}.{key}': bad dtype ({err})") from None
        if storage.hasobject or storage.itemsize != torch.empty(0, dtype=dtype).element_size():
            raise fail(path, f"'{name}.{key}': cannot store {dtype} as {storage}")
        shape = int_list(spec["shape"], len(spec["shape"]), f"{name}.{key}.shape", path)
        if not shape or shape[0] != rows:
            raise fail(path, f"'{name}.{key}' has shape {shape}, expected {rows} rows")
