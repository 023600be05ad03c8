"""pyg_sar: exact distributed full-batch training of PyG models (Sequential Aggregation and
Rematerialization).

Public API (reference: ``docs/api.rst``): :func:`init`, :func:`distribute`,
:func:`load_partition`, :func:`partition_graph`, :class:`PartitionData`, :func:`convert`,
:func:`unconvert`, :class:`SARConfig`, :class:`DistGraph`, :func:`print`, :func:`log`,
:func:`barrier`, :func:`global_sum`, :func:`save_checkpoint`, :func:`load_checkpoint`; global
losses and metrics in :mod:`pyg_sar.nn.functional`. Every name is imported on first use, so
``import pyg_sar`` stays cheap (it imports no torch).
"""
from __future__ import annotations

from pyg_sar._lazy import lazy_exports

__version__ = "0.2.0"

# Every public name is imported on first use: ``import pyg_sar`` imports neither torch nor PyG,
# so the command-line tools parse their arguments first.
_LAZY = {
    "SARConfig": "pyg_sar.config",
    "DistGraph": "pyg_sar.graph",
    "init": "pyg_sar.distributed.context",
    "DistContext": "pyg_sar.distributed.context",
    "get_context": "pyg_sar.distributed.context",
    "shutdown": "pyg_sar.distributed.context",
    "all_reduce_gradients": "pyg_sar.distributed.sync",
    "broadcast_parameters": "pyg_sar.distributed.sync",
    "partition_graph": "pyg_sar.partition",
    "load_partition": "pyg_sar.partition",
    "load_link_split": "pyg_sar.link.handout",
    "LocalPartition": "pyg_sar.partition",
    "PartitionData": "pyg_sar.partition",
    "HeteroPartition": "pyg_sar.partition",
    "distribute": "pyg_sar.link.handout",
    "convert": "pyg_sar.nn.convert",
    "shard_embedding": "pyg_sar.nn.embedding",
    "clip_grad_norm_": "pyg_sar.nn.clip",
    "unconvert": "pyg_sar.nn.unconvert",
    "print": "pyg_sar.distributed.rank_utils",
    "log": "pyg_sar.distributed.rank_utils",
    "barrier": "pyg_sar.distributed.rank_utils",
    "global_sum": "pyg_sar.distributed.rank_utils",
    "global_mean": "pyg_sar.nn.functional",
    "replicated": "pyg_sar.nn.functional",
    "UnsupportedLayerError": "pyg_sar.nn.layers",
    "gather": "pyg_sar.link.gather",
    "save_checkpoint": "pyg_sar.checkpoint",
    "load_checkpoint": "pyg_sar.checkpoint",
    "predict": "pyg_sar.predict",
    "predict_pairs": "pyg_sar.predict",
    "nn": "pyg_sar.nn",
    "link": "pyg_sar.link",
    "datasets": "pyg_sar.datasets",
    "ops": "pyg_sar.ops",
}

# pyg_sar.print and pyg_sar.log stay out of ``from pyg_sar import *``: they would shadow the
# builtin print and any log of the user's. ``ops`` (the kernels) is internal: it resolves, as
# every subpackage does, but ``__all__`` lists only what docs/api.rst documents.
__all__ = ["__version__", *(name for name in _LAZY if name not in ("print", "log", "ops"))]


# Entries naming a subpackage (``pyg_sar.nn``) export the module itself.
# Internal names once exported here: they resolve, with a DeprecationWarning, until 0.3.
_DEPRECATED = {"Block": "pyg_sar.graph"}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals(), subpackages=True,
                                    deprecated=_DEPRECATED)
