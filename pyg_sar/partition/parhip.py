"""The ParHIP binary graph format, written row range by row range (for KaMinPar and METIS).

Layout (all little-endian): a header of three ``uint64`` ``[version, n, m]`` (``m`` = number of
adjacency entries, both directions of every undirected edge); ``n + 1`` ``uint64`` offsets,
each the **byte address from the start of the file** of a node's first adjacency entry; the
adjacency (node ids); then, if present, ``n`` node weights. ``version``'s bits, lowest first:
no edge weights, no node weights, 32-bit offsets, 32-bit node ids, 32-bit node weights, 32-bit
edge weights. We write 64-bit offsets, 32-bit ids while ``n < 2**31`` and 32-bit weights while
they fit.

KaMinPar loads a truncated file **without an error** (a garbage graph of the header's size), so
:func:`check_parhip` checks the exact size before a partitioner reads the file.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

_HEADER = 3 * 8
_NO_EDGE_WEIGHTS, _NO_NODE_WEIGHTS = 1, 2
_OFFSETS_32, _IDS_32, _NODE_WEIGHTS_32, _EDGE_WEIGHTS_32 = 4, 8, 16, 32
_INT32_MAX = 2 ** 31 - 1


def id_dtype(num_nodes: int) -> np.dtype:
    """The node id type of the file: ``int32`` below ``2**31`` nodes, else ``int64``."""
    return np.dtype(np.int32 if num_nodes <= _INT32_MAX else np.int64)


def _adjacency_start(num_nodes: int) -> int:
    return _HEADER + (num_nodes + 1) * 8


class ParhipWriter:
    """Writes a ParHIP file whose rows arrive in ascending ranges (:meth:`append_rows`).

    The adjacency starts at a fixed address (it depends on ``n`` only), so rows are appended
    as they come and the offsets and header are written by :meth:`finish`; only the ``n``
    degrees are held in memory.
    """

    def __init__(self, path: Path, num_nodes: int) -> None:
        self.path = Path(path)
        self.num_nodes = num_nodes
        self.ids = id_dtype(num_nodes)
        self.degree = np.zeros(num_nodes, dtype=np.int64)
        self._next_row = 0
        self._fp = open(self.path, "xb")  # noqa: SIM115 - closed in finish()
        self._fp.seek(_adjacency_start(num_nodes))

    def append_rows(self, first_row: int, degree: np.ndarray, adjacency: np.ndarray) -> None:
        """Rows ``first_row .. first_row + len(degree) - 1`` (ascending, no gaps skipped over
        rows already written): their degrees and concatenated neighbour ids."""
        if first_row < self._next_row:
            raise ValueError(f"ParHIP rows must come in ascending order (row {first_row} after "
                             f"{self._next_row})")
        end = first_row + int(degree.shape[0])
        self.degree[first_row:end] = degree
        self._next_row = end
        self._fp.write(np.ascontiguousarray(adjacency, dtype=self.ids).tobytes())

    def finish(self, node_weights: np.ndarray | None = None) -> int:
        """Write the node weights (if any), offsets and header; close; return ``m``."""
        n = self.num_nodes
        m = int(self.degree.sum())
        version = _NO_EDGE_WEIGHTS | (_IDS_32 if self.ids == np.int32 else 0)
        try:
            if node_weights is None:
                version |= _NO_NODE_WEIGHTS
            else:
                wide = int(node_weights.max(initial=0)) > _INT32_MAX
                version |= 0 if wide else _NODE_WEIGHTS_32
                self._fp.write(np.ascontiguousarray(
                    node_weights, dtype=np.int64 if wide else np.int32).tobytes())
            offsets = np.empty(n + 1, dtype=np.int64)
            offsets[0] = 0
            np.cumsum(self.degree, out=offsets[1:])
            offsets *= self.ids.itemsize
            offsets += _adjacency_start(n)
            self._fp.seek(0)
            self._fp.write(np.array([version, n, m], dtype=np.uint64).tobytes())
            self._fp.write(offsets.astype(np.uint64, copy=False).tobytes())
            self._fp.flush()
            os.fsync(self._fp.fileno())
        finally:
            self._fp.close()
        return m


def write_parhip(path: Path, xadj: np.ndarray, adjncy: np.ndarray,
                 node_weights: np.ndarray | None = None) -> int:
    """Write the CSR ``(xadj, adjncy)`` (and optional node weights) as a ParHIP file."""
    writer = ParhipWriter(path, int(xadj.shape[0]) - 1)
    writer.append_rows(0, np.diff(xadj), adjncy)
    return writer.finish(node_weights)


def _header(path: Path) -> tuple[int, int, int]:
    with open(path, "rb") as fp:
        raw = fp.read(_HEADER)
    if len(raw) != _HEADER:
        raise ValueError(f"ParHIP file '{path}' is {len(raw)} bytes, shorter than its header")
    version, n, m = (int(v) for v in np.frombuffer(raw, dtype=np.uint64))
    return version, n, m


def expected_size(version: int, n: int, m: int) -> int:
    """Bytes of a ParHIP file with this header (64-bit offsets, no edge weights)."""
    ids = 4 if version & _IDS_32 else 8
    weights = 0 if version & _NO_NODE_WEIGHTS else n * (4 if version & _NODE_WEIGHTS_32 else 8)
    return _adjacency_start(n) + m * ids + weights


def check_parhip(path: Path, num_nodes: int, num_entries: int) -> None:
    """Refuse a ParHIP file whose header or size is not that of ``num_nodes`` nodes and
    ``num_entries`` adjacency entries (KaMinPar itself would load a truncated file)."""
    version, n, m = _header(path)
    if version & _OFFSETS_32 or not version & _NO_EDGE_WEIGHTS:
        raise ValueError(f"ParHIP file '{path}' has version {version}: only 64-bit offsets "
                         f"without edge weights are written here")
    if (n, m) != (num_nodes, num_entries):
        raise ValueError(f"ParHIP file '{path}' holds n={n}, m={m}; expected n={num_nodes}, "
                         f"m={num_entries}")
    size, want = os.path.getsize(path), expected_size(version, n, m)
    if size != want:
        raise ValueError(f"ParHIP file '{path}' is {size} bytes, expected {want} for n={n}, "
                         f"m={m} (truncated or corrupt)")


def read_csr(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(xadj int64 [n + 1], adjncy [m] memory-mapped, node weights or None)`` of a ParHIP
    file written by :class:`ParhipWriter` (size-checked first)."""
    version, n, m = _header(path)
    check_parhip(path, n, m)
    start = _adjacency_start(n)
    ids = np.int32 if version & _IDS_32 else np.int64
    offsets = np.fromfile(path, dtype=np.uint64, count=n + 1, offset=_HEADER).astype(np.int64)
    xadj = (offsets - start) // np.dtype(ids).itemsize
    adjncy = np.memmap(path, dtype=ids, mode="r", offset=start, shape=(m,)) if m else \
        np.zeros(0, dtype=ids)
    weights = None
    if not version & _NO_NODE_WEIGHTS:
        wtype = np.int32 if version & _NODE_WEIGHTS_32 else np.int64
        weights = np.fromfile(path, dtype=wtype, count=n,
                              offset=start + m * np.dtype(ids).itemsize).astype(np.int64)
    return xadj, adjncy, weights
