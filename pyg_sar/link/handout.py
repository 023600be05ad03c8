"""``pyg_sar.distribute`` and ``pyg_sar.load_link_split`` as users call them: the partition
layer's functions, with a link split's pairs handed out as :class:`~pyg_sar.link.pair_ids.PairIds`
(so that PyG's ``z[edge_label_index[0]]`` fetches rows from every rank)."""
from __future__ import annotations

import functools
from typing import Any

from pyg_sar.link.pair_ids import with_pair_ids
from pyg_sar.partition.distribute import distribute as _distribute
from pyg_sar.partition.link_split import load_link_split as _load_link_split

_PAIRS_NOTE = """

    The pairs of a homogeneous link split (``edge_label_index``, ``pos_edge_label_index``,
    ``neg_edge_label_index``) are :class:`~pyg_sar.link.pair_ids.PairIds`: indexing this rank's node
    rows with them (``z[edge_label_index[0]]``) gathers the rows from their owners, so PyG's
    decoders run unchanged.
"""


@functools.wraps(_distribute)
def distribute(*args: Any, **kwargs: Any) -> Any:
    return with_pair_ids(_distribute(*args, **kwargs))


@functools.wraps(_load_link_split)
def load_link_split(*args: Any, **kwargs: Any) -> Any:
    return with_pair_ids(_load_link_split(*args, **kwargs))


distribute.__doc__ = (_distribute.__doc__ or "") + _PAIRS_NOTE
load_link_split.__doc__ = (_load_link_split.__doc__ or "") + _PAIRS_NOTE
