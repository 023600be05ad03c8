"""Link prediction and recommendation over a partitioned graph.

Node pairs whose ends live on different ranks (:func:`gather`), negatives drawn from the whole
graph and keyed by ``(seed, epoch)`` so that every number of ranks draws the same ones, and
global ranking metrics. Global node ids here are the partition's new ids: rank ``r`` owns
``[node_offsets[r], node_offsets[r + 1])``.

Which ids: the partition renumbers the nodes, so a pair is in NEW global ids (pairs from
:func:`pyg_sar.distribute` / :func:`~pyg_sar.load_link_split` and from
:func:`negative_sampling`) or in ORIGINAL ids (ids of the graph before partitioning, e.g.
PyG's own ``RandomLinkSplit`` or ``negative_sampling`` on the whole graph). :func:`gather`
is told which with ``ids=`` and refuses to guess wherever the two may differ::

    src, dst = pyg_sar.gather(z, data.edge_label_index.flatten(), ids="new").chunk(2)
    rows = pyg_sar.gather(z, pairs.flatten(), ids="original", graph=data.edge_index)

:func:`to_new_ids` maps original ids to new ones.
"""
from __future__ import annotations

from pyg_sar._lazy import lazy_exports

# name -> module; each module is imported on first use.
_LAZY: dict[str, str] = {
    # global losses and ranking metrics (H3)
    **dict.fromkeys(("roc_auc", "average_precision", "roc_auc_score",
                     "average_precision_score", "mrr", "hits_at_k", "bpr_loss", "recall_at_k",
                     "precision_at_k", "ndcg_at_k"), "pyg_sar.link.metrics"),
    "topk_items": "pyg_sar.link.topk",
    # distributed gather and negatives (H1)
    "gather": "pyg_sar.link.gather",
    **dict.fromkeys(("negative_sampling", "reference_negative_sampling"),
                    "pyg_sar.link.negatives"),
    # pairs that index like PyG's: z[edge_label_index[0]] gathers from every rank
    **dict.fromkeys(("PairIds", "PairRows"), "pyg_sar.link.pair_ids"),
    # knowledge-graph triples: head-or-tail corruption, filtered ranking over all nodes
    **dict.fromkeys(("corrupt_pairs", "reference_corrupt_pairs"), "pyg_sar.link.corruption"),
    "FilteredMRR": "pyg_sar.link.filtered_rank",
    # original -> new global ids of a partition (H2)
    "to_new_ids": "pyg_sar.link.split",
}

# The submodule ``gather`` shares its function's name: importing it binds the package attribute
# to the module, so it is imported here and the function bound over it.
from pyg_sar.link.gather import gather  # noqa: E402, F401

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
