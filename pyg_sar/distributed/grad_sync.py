"""Moved: the model-level gradient policy (synchronisation, broadcast, drift and loss checks)
is :mod:`pyg_sar.nn.grad_sync`, and the backward-pass bookkeeping under it
:mod:`pyg_sar.distributed.backward`. The names resolve here for one release, with a
``DeprecationWarning`` (models pickled before the move load through them)."""
from __future__ import annotations

from pyg_sar._lazy import lazy_exports

_MOVED = {
    **dict.fromkeys(("GradSync", "install", "uninstall", "disable_gradient_sync",
                     "find_context", "graph_candidates", "fingerprints", "STATE", "LOSS_FIX",
                     "CHECKED_FIRST", "BUCKET_MB"), "pyg_sar.nn.grad_sync"),
    **dict.fromkeys(("mark_global_loss", "at_end_of_backward", "in_backward"),
                    "pyg_sar.distributed.backward"),
}

__getattr__, __dir__ = lazy_exports(__name__, {}, globals(), deprecated=_MOVED)
