"""Offline graph partitioning and the on-disk partition format (docs/how_sar_works.md).

* :func:`partition_graph` splits a PyG ``Data`` into ``P`` parts written to a folder;
* :func:`load_partition` reads one rank's part as a :class:`PartitionData` (a PyG ``Data``;
  ``LocalPartition`` is another name for it), or a :class:`HeteroPartition` for a partitioned
  ``HeteroData`` (:mod:`pyg_sar.partition.hetero`);
* :func:`load_link_split` reads one rank's part of a partitioned link-prediction split as
  ``(train, val, test)`` (:mod:`pyg_sar.partition.link_split`);
* :func:`pyg_sar.distribute` partitions an in-memory ``Data`` inside a running job and hands
  every rank its part over the communicator (:mod:`pyg_sar.partition.distribute`);
* :func:`write_partition_streaming` partitions a graph on disk (:class:`NpySource`,
  :class:`ChunkSource`) without holding its edges, with KaMinPar or METIS
  (:mod:`pyg_sar.partition.stream`);
* ``python -m pyg_sar.partition --dataset NAME --num-parts P --out DIR`` does it from the shell
  (``--source DIR`` for a graph on disk).
"""
from pyg_sar.partition.api import partition_graph
from pyg_sar.partition.format import FORMAT_VERSION, MetaError
from pyg_sar.partition.hetero import HeteroPartition
from pyg_sar.partition.link_split import load_link_split
from pyg_sar.partition.loader import (
    LocalPartition,
    PartitionData,
    load_node_map,
    load_partition,
    read_meta,
)
from pyg_sar.partition.sources import ChunkSource, NpySource
from pyg_sar.partition.storage import ChecksumError
from pyg_sar.partition.stream import write_partition_streaming
from pyg_sar.partition.writer import PartitionReport, write_partition

__all__ = [
    "FORMAT_VERSION",
    "ChecksumError",
    "ChunkSource",
    "HeteroPartition",
    "LocalPartition",
    "MetaError",
    "NpySource",
    "PartitionData",
    "PartitionReport",
    "load_link_split",
    "load_node_map",
    "load_partition",
    "partition_graph",
    "read_meta",
    "write_partition",
    "write_partition_streaming",
]
