"""Stand-ins for ``ogb.nodeproppred``'s ``PygNodePropPredDataset`` and ``Evaluator``, so that an
OGB script ports by changing its import line.

* :class:`PygNodePropPredDataset` reads the dataset from the folder where ``ogb`` unpacks it
  (``<root>/ogbn_products/raw/...``, read by :func:`~pyg_sar.datasets.ogb.ogb_node_dataset`,
  without the ``ogb`` package) and never downloads: a missing folder is an error naming it.
* :class:`Evaluator` computes OGB's accuracy over the rows of EVERY rank (each rank passes its
  own rows; the counts are summed over ranks), where ``ogb``'s would score one rank's rows.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch
from torch import Tensor

# name -> (OGB's add_inverse_edge, its download address), from ogb's master.csv.
_NODE_DATASETS = {
    "ogbn-products": (True, "http://snap.stanford.edu/ogb/data/nodeproppred/products.zip"),
    "ogbn-arxiv": (False, "http://snap.stanford.edu/ogb/data/nodeproppred/arxiv.zip"),
    "ogbn-papers100M": (False, "http://snap.stanford.edu/ogb/data/nodeproppred/"
                               "papers100M-bin.zip"),
    "ogbn-mag": (False, "http://snap.stanford.edu/ogb/data/nodeproppred/mag.zip"),
}


def _known(name: str) -> tuple[bool, str]:
    if name not in _NODE_DATASETS:
        raise ValueError(f"ogb: unknown or unsupported dataset {name!r}; supported: "
                         f"{', '.join(sorted(_NODE_DATASETS))} (accuracy-scored, one label "
                         f"per node)")
    return _NODE_DATASETS[name]


class PygNodePropPredDataset:
    """``ogb.nodeproppred.PygNodePropPredDataset`` read from a local folder.

    Args:
        name: the OGB name, e.g. ``"ogbn-products"``.
        root: the folder holding ``<name with - as _>/`` (``raw/`` and ``split/`` as ``ogb``
            unpacks them).
        transform: applied to the graph on every ``dataset[0]``, as in PyG.
        pre_transform: applied once, when the graph is read.

    The graph is a ``Data`` with ``x``, ``y`` (``int64 [num_nodes, 1]``, as OGB's; ``-1``
    where a node is unlabelled) and ``edge_index`` (reversed edges added where OGB adds them,
    e.g. ogbn-products). ogbn-mag's folder gives a ``HeteroData``.

    Raises:
        ValueError: ``name`` is not one of the supported datasets, or its folder is missing
            (nothing is downloaded) or malformed.
    """

    def __init__(self, name: str, root: str | os.PathLike = "dataset",
                 transform: Optional[Callable] = None,
                 pre_transform: Optional[Callable] = None) -> None:
        from pyg_sar.datasets.ogb import ogb_node_dataset
        add_inverse_edge, url = _known(name)
        self.name = name
        self.root = Path(root).expanduser() / name.replace("-", "_")
        if not self.root.is_dir():
            raise ValueError(f"ogb: dataset folder {self.root} does not exist; pyg_sar never "
                             f"downloads: unpack {url} into {self.root.parent}")
        # OGB's graph has no masks: the splits are read by get_idx_split only (a heterogeneous
        # folder's reader makes them anyway: dropped).
        data = ogb_node_dataset(self.root, add_inverse_edge=add_inverse_edge, masks=False)
        for key in ("train_mask", "val_mask", "test_mask"):
            if key in data:
                del data[key]
        if "y" in data and data.y.dim() == 1:
            data.y = data.y.view(-1, 1)
        self._data = data if pre_transform is None else pre_transform(data)
        self.transform = transform

    def __len__(self) -> int:
        return 1

    def __getitem__(self, idx: int) -> Any:
        if idx not in (0, -1):
            raise IndexError(f"ogb: {self.name} holds one graph (index 0), got {idx}")
        data = self._data.clone()
        return data if self.transform is None else self.transform(data)

    @property
    def num_features(self) -> int:
        return int(self._data.x.shape[-1])

    @property
    def num_classes(self) -> int:
        return int(self._data.y.max()) + 1

    def get_idx_split(self, split_type: Optional[str] = None) -> dict[str, Tensor]:
        """``{"train", "valid", "test"}``: node ids (original, ``int64``) of each split, read
        from ``split/<split_type>/`` (by default the only split folder)."""
        from pyg_sar.datasets.ogb_files import find_split_dir, read_csv
        folder = find_split_dir(self.root, split_type)
        return {key: torch.from_numpy(read_csv(folder / f"{key}.csv.gz", np.int64, 1)
                                      .reshape(-1).copy())
                for key in ("train", "valid", "test")}

    def __repr__(self) -> str:
        return f"PygNodePropPredDataset({self.name!r}, root={str(self.root.parent)!r})"


class Evaluator:
    """``ogb.nodeproppred.Evaluator`` for the accuracy-scored datasets, over all ranks.

    ``eval({"y_true": ..., "y_pred": ...})`` takes this rank's rows (tensors or arrays of
    shape ``[rows, tasks]``) and returns ``{"acc": ...}``: the fraction of labelled rows of all
    ranks predicted right, averaged over tasks, as OGB computes it for the whole graph.
    COLLECTIVE: every rank calls it, with its own rows (maybe none). One process: OGB's value.
    """

    def __init__(self, name: str) -> None:
        _known(name)
        self.name = name
        self.eval_metric = "acc"

    def eval(self, input_dict: dict) -> dict[str, float]:
        from pyg_sar.distributed.rank_utils import global_sum
        y_true, y_pred = (torch.as_tensor(np.asarray(input_dict[k]) if not isinstance(
            input_dict[k], Tensor) else input_dict[k]) for k in ("y_true", "y_pred"))
        if y_true.shape != y_pred.shape or y_true.dim() != 2:
            raise ValueError(f"ogb Evaluator({self.name!r}): y_true and y_pred must have the "
                             f"same shape [rows, tasks], got {list(y_true.shape)} and "
                             f"{list(y_pred.shape)}")
        y_true, y_pred = y_true.cpu(), y_pred.cpu()
        labelled = (y_true == y_true) & (y_true >= 0)  # nan (OGB) or -1 (pyg_sar) unlabelled
        counts = torch.stack([(labelled & (y_true == y_pred)).sum(0), labelled.sum(0)])
        counts = global_sum(counts.to(torch.float64)).cpu()
        if bool((counts[1] == 0).any()):
            raise RuntimeError(f"ogb Evaluator({self.name!r}): a task has no labelled row "
                               f"on any rank")
        return {"acc": float((counts[0] / counts[1]).mean())}
