"""``pyg_sar.distribute`` and ``pyg_sar.load_link_split`` as users call them: the partition
layer's functions, with node pairs handed out as :class:`~pyg_sar.link.pair_ids.PairIds` (so
that PyG's ``z[edge_label_index[0]]`` fetches rows from every rank).

Pairs come from a link split (``RandomLinkSplit``'s triple: ``edge_label_index`` and its
kin) or from pair sets of a plain ``Data``, as PyG's ``RelLinkPredDataset`` holds them
(``train_edge_index`` with ``train_edge_type``, ``valid_*``, ``test_*``): each rank keeps the
pairs whose source it owns, in new global ids, with their aligned tensors."""
from __future__ import annotations

import copy
import functools
from typing import Any

import torch
from torch import Tensor

from pyg_sar.link.pair_ids import as_pair_ids, with_pair_ids
from pyg_sar.partition.distribute import distribute as _distribute
from pyg_sar.partition.link_split import load_link_split as _load_link_split

_PAIRS_NOTE = """

    The pairs of a homogeneous link split (``edge_label_index``, ``pos_edge_label_index``,
    ``neg_edge_label_index``) are :class:`~pyg_sar.link.pair_ids.PairIds`: indexing this rank's
    node rows with them (``z[edge_label_index[0]]``) gathers the rows from their owners, so
    PyG's decoders run unchanged.
"""

_PAIR_SETS_NOTE = """
    Pair sets of a plain ``Data`` (as PyG's ``RelLinkPredDataset``): an integer attribute
    ``<name>_edge_index`` ``[2, n]`` of original node ids (other than ``edge_index``), with the
    attributes ``<name>_edge_*`` of ``n`` rows aligned with it (``train_edge_type``), is not
    partitioned as graph data: each rank gets the pairs whose source it owns, as
    :class:`~pyg_sar.link.pair_ids.PairIds` of new global ids, their aligned rows, and
    ``<name>_edge_ids``, each pair's position in the input (keys for
    :func:`pyg_sar.link.negative_sampling`).
"""

_SUFFIX = "_edge_index"


def pair_sets(data: Any) -> dict[str, list[str]]:
    """``{pairs key: [aligned keys]}`` of a plain ``Data`` (see :func:`distribute`)."""
    from torch_geometric.data import Data
    if not isinstance(data, Data):
        return {}
    keys = list(data.keys())
    out = {}
    for key in keys:
        value = data[key]
        if not key.endswith(_SUFFIX) or key == "edge_index" or not isinstance(value, Tensor) \
                or value.dim() != 2 or value.shape[0] != 2 or value.is_floating_point():
            continue
        prefix = key[:-len("index")]  # "train_edge_"
        n = value.shape[1]
        out[key] = [k for k in keys if k.startswith(prefix) and k != key
                    and isinstance(data[k], Tensor) and data[k].dim() >= 1
                    and data[k].shape[0] == n]
    return out


def _attach_pairs(part: Any, data: Any, sets: dict[str, list[str]]) -> None:
    """Each pair set's pairs whose source ``part``'s rank owns, in new ids (collective)."""
    from pyg_sar.link.split import to_new_ids
    graph = part.edge_index
    lo, hi = graph.node_offsets[graph.rank], graph.node_offsets[graph.rank + 1]
    for key, aligned in sets.items():
        new = to_new_ids(part, data[key])
        own = (new[0] >= lo) & (new[0] < hi)
        part[key] = as_pair_ids(new[:, own], graph)
        for name in aligned:
            part[name] = data[name][own.to(data[name].device)]
        part[key[:-len("index")] + "ids"] = own.nonzero().view(-1).cpu()


@functools.wraps(_distribute)
def distribute(data: Any, *args: Any, **kwargs: Any) -> Any:
    sets = pair_sets(data)
    if not sets:
        return with_pair_ids(_distribute(data, *args, **kwargs))
    graph_data = copy.copy(data)
    for key, aligned in sets.items():
        for name in (key, *aligned):
            del graph_data[name]
    part = _distribute(graph_data, *args, **kwargs)
    with torch.no_grad():
        _attach_pairs(part, data, sets)
    return with_pair_ids(part)


@functools.wraps(_load_link_split)
def load_link_split(*args: Any, **kwargs: Any) -> Any:
    return with_pair_ids(_load_link_split(*args, **kwargs))


distribute.__doc__ = (_distribute.__doc__ or "") + _PAIRS_NOTE + _PAIR_SETS_NOTE
load_link_split.__doc__ = (_load_link_split.__doc__ or "") + _PAIRS_NOTE
