"""Check a user's PyG ``Data`` against what pyg_sar needs, and fill in a split if it has none."""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data

from pyg_sar.datasets._split import random_split_masks
from pyg_sar.partition.finite import check_finite, check_policy

MASKS = ("train_mask", "val_mask", "test_mask")


def _shape(t: Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


def from_pyg(data: Data, split_seed: int = 0, train_fraction: float = 0.6,
             val_fraction: float = 0.2, on_nonfinite: str = "warn") -> Data:
    """Validate any PyG ``Data`` for node classification and return a normalised copy.

    Checks: ``edge_index`` is an integer ``[2, E]`` tensor with ids in ``[0, num_nodes)``;
    ``x`` is a 2-D numeric tensor with one row per node; ``y`` is an integer tensor of shape
    ``[N]`` (or ``[N, 1]``) with no negative labels; masks are boolean ``[N]``; ``edge_attr``
    / ``edge_weight``, if present, have one row per edge. The copy has ``edge_index`` int64,
    ``x`` float32, ``y`` int64 ``[N]``. Other attributes are kept unchanged.

    If the graph has none of ``train_mask``, ``val_mask``, ``test_mask``, a seeded random split
    is added; if it has some but not all, that is an error (which nodes are unused would be a
    guess).

    NaN / Inf in ``x``, ``edge_attr`` or ``edge_weight`` are reported by name and first row:
    ``on_nonfinite="warn"`` (default) warns, ``"raise"`` refuses, ``"ignore"`` skips the check.

    Raises:
        ValueError: naming the attribute and the problem.
    """
    check_policy(on_nonfinite, "from_pyg")
    if not isinstance(data, Data):
        raise ValueError(f"from_pyg: expected a torch_geometric.data.Data (got "
                         f"{type(data).__name__})")
    out = data.clone()

    x = out.get("x")
    if not isinstance(x, Tensor):
        raise ValueError("from_pyg: data.x is missing (node features are required)")
    if x.dim() != 2 or x.is_complex() or x.dtype == torch.bool:
        raise ValueError(f"from_pyg: data.x must be a 2-D real tensor [num_nodes, num_features] "
                         f"(got shape {_shape(x)}, dtype {x.dtype})")
    num_nodes = x.size(0)
    if out.get("num_nodes") is not None and out.num_nodes != num_nodes:
        raise ValueError(f"from_pyg: data.num_nodes is {out.num_nodes} but data.x has "
                         f"{num_nodes} rows")
    out.x = x.float()

    edge_index = out.get("edge_index")
    if not isinstance(edge_index, Tensor):
        raise ValueError("from_pyg: data.edge_index is missing (a [2, E] tensor is required)")
    if edge_index.dtype.is_floating_point or edge_index.is_complex() or \
            edge_index.dtype == torch.bool:
        raise ValueError(f"from_pyg: data.edge_index must be an integer tensor (got "
                         f"{edge_index.dtype})")
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"from_pyg: data.edge_index must have shape [2, E] (got "
                         f"{_shape(edge_index)})")
    edge_index = edge_index.long()
    if edge_index.numel() > 0:
        lo, hi = int(edge_index.min()), int(edge_index.max())
        if lo < 0 or hi >= num_nodes:
            raise ValueError(f"from_pyg: data.edge_index has node ids in [{lo}, {hi}] but "
                             f"there are {num_nodes} nodes (ids must be in [0, {num_nodes}))")
    out.edge_index = edge_index
    num_edges = edge_index.size(1)

    for key in ("edge_attr", "edge_weight"):
        value = out.get(key)
        if value is not None and (not isinstance(value, Tensor) or value.dim() == 0
                                  or value.size(0) != num_edges):
            got = _shape(value) if isinstance(value, Tensor) else type(value).__name__
            raise ValueError(f"from_pyg: data.{key} must have one row per edge ({num_edges}) "
                             f"(got {got})")

    check_finite({f"data.{k}": out.get(k) for k in ("x", "edge_attr", "edge_weight")},
                 on_nonfinite, "from_pyg")

    y = out.get("y")
    if not isinstance(y, Tensor):
        raise ValueError("from_pyg: data.y is missing (node labels are required)")
    if y.dim() == 2 and y.size(1) == 1:
        y = y.view(-1)
    if y.dtype.is_floating_point or y.is_complex() or y.dtype == torch.bool:
        raise ValueError(f"from_pyg: data.y must hold integer class labels (got {y.dtype})")
    if _shape(y) != (num_nodes,):
        raise ValueError(f"from_pyg: data.y must have shape [{num_nodes}] (got {_shape(y)})")
    y = y.long()
    if y.numel() > 0 and int(y.min()) < 0:
        raise ValueError(f"from_pyg: data.y has negative labels (min {int(y.min())})")
    out.y = y

    present = [name for name in MASKS if out.get(name) is not None]
    if not present:
        out.train_mask, out.val_mask, out.test_mask = random_split_masks(
            num_nodes, train_fraction, val_fraction, split_seed)
    elif len(present) != len(MASKS):
        missing = [name for name in MASKS if name not in present]
        raise ValueError(f"from_pyg: data has {present} but not {missing}; give all three "
                         f"masks or none (then a seeded random split is made)")
    else:
        for name in MASKS:
            mask = out[name]
            if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
                got = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
                raise ValueError(f"from_pyg: data.{name} must be a bool tensor (got {got})")
            if _shape(mask) != (num_nodes,):
                raise ValueError(f"from_pyg: data.{name} must have shape [{num_nodes}] (got "
                                 f"{_shape(mask)}; for several splits pick one column)")
    return out
