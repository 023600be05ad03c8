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
from pyg_sar._lazy import lazy_exports

# Each public name is imported on first use, so that ``python -m pyg_sar.partition`` parses its
# arguments before torch is imported.
_LAZY = {
    "partition_graph": "pyg_sar.partition.api",
    "FORMAT_VERSION": "pyg_sar.partition.format",
    "MetaError": "pyg_sar.partition.format",
    "HeteroPartition": "pyg_sar.partition.hetero",
    "load_link_split": "pyg_sar.partition.link_split",
    "LocalPartition": "pyg_sar.partition.loader",
    "PartitionData": "pyg_sar.partition.loader",
    "load_node_map": "pyg_sar.partition.loader",
    "load_partition": "pyg_sar.partition.loader",
    "read_meta": "pyg_sar.partition.loader",
    "ChunkSource": "pyg_sar.partition.sources",
    "NpySource": "pyg_sar.partition.sources",
    "ChecksumError": "pyg_sar.partition.storage",
    "write_partition_streaming": "pyg_sar.partition.stream",
    "PartitionReport": "pyg_sar.partition.writer",
    "write_partition": "pyg_sar.partition.writer",
}

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

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
