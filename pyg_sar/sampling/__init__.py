"""Matrix-based bulk sampling (Tripathy, Yelick, Buluç, MLSys 2024).

GraphSAGE (node-wise) and LADIES (layer-wise) minibatches written as sparse-matrix steps over
``k`` minibatches at once, on one process or over the ranks of a partition, yielded as PyG
``Data`` objects with ``NeighborLoader``'s layout:

* :class:`BulkNeighborLoader`, :class:`BulkLadiesLoader`: the loaders;
* :func:`sample_bulk`, :class:`BulkSample`: one bulk call of the sampler;
* :class:`SamplingGraph`, :class:`LocalRows`: the adjacency rows the sampler reads.
"""
from pyg_sar.sampling.bulk import BulkSample, sample_bulk
from pyg_sar.sampling.graph import SamplingGraph
from pyg_sar.sampling.loader import BulkLadiesLoader, BulkNeighborLoader
from pyg_sar.sampling.rows import LocalRows

__all__ = [
    "BulkLadiesLoader",
    "BulkNeighborLoader",
    "BulkSample",
    "LocalRows",
    "SamplingGraph",
    "sample_bulk",
]
