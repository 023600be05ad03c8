"""On-disk graph sources for :func:`~pyg_sar.partition.stream.write_partition_streaming`.

A source gives ``num_nodes``, ``num_edges``, the edges in chunks (``int64 [2, c]`` with their
starting position) and its node / edge tensors memory-mapped, so nothing is read whole:

* :class:`NpySource`: a folder with ``edge_index.npy`` (``[2, E]``, int32 or int64),
  ``source.json`` (``{"num_nodes": N}``; optional ``"num_edges"``, ``"num_classes"``,
  ``"sha256": {file: hex}`` checked when present), and node tensors ``x.npy``, ``y.npy``,
  ``train_mask.npy``, ... / edge tensors ``edge_attr.npy``, ``edge_weight.npy``, ...;
* :class:`ChunkSource`: a folder with ``edges_00000.npy``, ``edges_00001.npy``, ... (each
  ``[2, c]``) and ``manifest.json`` (``{"num_nodes": N, "chunks": [{"file", "num_edges",
  "sha256"}, ...]}``), node / edge tensors as above.

Opening a source checks shapes and dtypes only; :meth:`EdgeSource.chunks` checks hashes and
counts as it reads (the streaming writer reads everything once before it writes anything).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from pyg_sar.partition import format as fmt

NODE_FILE_KEYS = ("x", "y", "train_mask", "val_mask", "test_mask", "pos", "node_type")
EDGE_FILE_KEYS = ("edge_attr", "edge_weight", "edge_type")
_HASH_BLOCK = 1 << 24


class EdgeSource(Protocol):
    """What the streaming writer reads: sizes, edges in chunks, memory-mapped tensors."""

    num_nodes: int
    num_edges: int
    num_classes: int | None

    def chunks(self, chunk_edges: int) -> Iterator[tuple[int, np.ndarray]]:
        """``(start, edge_index int64 [2, c])`` in input order, ``c <= chunk_edges``."""

    def node_tensors(self) -> dict[str, np.ndarray]:
        """Node tensors (``N`` rows each), memory-mapped."""

    def edge_tensors(self) -> dict[str, np.ndarray]:
        """Edge tensors (``E`` rows each), memory-mapped."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fp:
        while block := fp.read(_HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"graph source: '{path}' is missing") from None
    except (OSError, ValueError) as err:
        raise ValueError(f"graph source: cannot read '{path}': {err}") from None
    if not isinstance(value, dict):
        raise ValueError(f"graph source: '{path}' must hold a JSON object")
    return value


def _count(value: Any, what: str, path: Path, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"graph source: {what} in '{path}' must be an integer >= {minimum} "
                         f"(got {value!r})")
    return value


def _open_npy(path: Path) -> np.ndarray:
    """``np.load(mmap_mode="r")`` with a ValueError naming a truncated or corrupt file."""
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise ValueError(f"graph source: '{path}' is missing") from None
    except Exception as err:  # truncated data, bad header, pickled objects
        raise ValueError(f"graph source: '{path}' is not a readable .npy array (truncated or "
                         f"corrupt?): {err}") from None
    if not isinstance(array, np.ndarray) or array.dtype.hasobject:
        raise ValueError(f"graph source: '{path}' is not a plain array")
    return array


def _check_edges(array: np.ndarray, path: Path) -> None:
    if array.dtype.kind not in "iu":
        raise ValueError(f"graph source: '{path}' has dtype {array.dtype}; edge indices must "
                         f"be integers (int32 or int64)")
    if array.ndim != 2 or array.shape[0] != 2:
        hint = " (transpose it: [2, E] is expected)" if array.ndim == 2 and \
            array.shape[1] == 2 else ""
        raise ValueError(f"graph source: '{path}' has shape {list(array.shape)}, expected "
                         f"[2, num_edges]{hint}")


def _tensors(folder: Path, names: tuple[str, ...], rows: int, what: str,
             extra: list[str]) -> dict[str, np.ndarray]:
    found = {}
    for name in dict.fromkeys([*names, *extra]):
        path = folder / f"{name}.npy"
        if not path.exists():
            if name in extra:
                raise ValueError(f"graph source: {what} tensor '{path}' is listed but missing")
            continue
        if not fmt.KEY_PATTERN.fullmatch(name):
            raise ValueError(f"graph source: tensor name {name!r} cannot be stored")
        array = _open_npy(path)
        if array.ndim == 0 or array.shape[0] != rows:
            raise ValueError(f"graph source: {what} tensor '{path}' has "
                             f"{array.shape[0] if array.ndim else 'no'} rows, expected {rows}")
        found[name] = array
    return found


class _FolderSource:
    """Node / edge tensors of a source folder."""

    folder: Path
    num_nodes: int
    num_edges: int
    _node_names: list[str]
    _edge_names: list[str]

    def _open_tensors(self) -> None:
        self._node = _tensors(self.folder, NODE_FILE_KEYS, self.num_nodes, "node",
                              self._node_names)
        self._edge = _tensors(self.folder, EDGE_FILE_KEYS, self.num_edges, "edge",
                              self._edge_names)

    def node_tensors(self) -> dict[str, np.ndarray]:
        return dict(self._node)

    def edge_tensors(self) -> dict[str, np.ndarray]:
        return dict(self._edge)


def _names(meta: dict, key: str, path: Path) -> list[str]:
    value = meta.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"graph source: '{key}' in '{path}' must be a list of names")
    return value


class NpySource(_FolderSource):
    """A folder with ``edge_index.npy`` ``[2, E]`` and ``source.json`` (see module doc).

    Args:
        folder: the folder.
        verify: check the SHA-256 of every file listed in ``source.json``'s ``"sha256"``
            while streaming (one extra read of each).
    """

    def __init__(self, folder: str | Path, verify: bool = True) -> None:
        self.folder = Path(folder)
        meta_path = self.folder / "source.json"
        meta = _read_json(meta_path)
        self.num_nodes = _count(meta.get("num_nodes"), "'num_nodes'", meta_path, 1)
        self.num_classes = meta.get("num_classes")
        path = self.folder / "edge_index.npy"
        self._edges = _open_npy(path)
        _check_edges(self._edges, path)
        self.num_edges = int(self._edges.shape[1])
        if "num_edges" in meta and meta["num_edges"] != self.num_edges:
            raise ValueError(f"graph source: '{path}' holds {self.num_edges} edges but "
                             f"'{meta_path}' says num_edges={meta['num_edges']!r}")
        hashes = meta.get("sha256", {}) if verify else {}
        if not isinstance(hashes, dict):
            raise ValueError(f"graph source: 'sha256' in '{meta_path}' must map files to hashes")
        self._hashes = hashes
        self._node_names = _names(meta, "node_tensors", meta_path)
        self._edge_names = _names(meta, "edge_tensors", meta_path)
        self._open_tensors()

    def verify_files(self) -> None:
        """Compare every file's SHA-256 with ``source.json`` (ValueError naming the file)."""
        for name, want in sorted(self._hashes.items()):
            got = _sha256(self.folder / name)
            if got != want:
                raise ValueError(f"graph source: '{self.folder / name}' has sha256 {got}, but "
                                 f"source.json records {want} (corrupt or modified)")

    def chunks(self, chunk_edges: int) -> Iterator[tuple[int, np.ndarray]]:
        for start in range(0, self.num_edges, chunk_edges):
            stop = min(start + chunk_edges, self.num_edges)
            yield start, np.asarray(self._edges[:, start:stop], dtype=np.int64)


class ChunkSource(_FolderSource):
    """A folder of ``edges_{k:05d}.npy`` chunks with ``manifest.json`` (see module doc).

    The SHA-256 and edge count of every chunk are checked when it is read.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        meta_path = self.folder / "manifest.json"
        meta = _read_json(meta_path)
        self.num_nodes = _count(meta.get("num_nodes"), "'num_nodes'", meta_path, 1)
        self.num_classes = meta.get("num_classes")
        chunks = meta.get("chunks")
        if not isinstance(chunks, list):
            raise ValueError(f"graph source: 'chunks' in '{meta_path}' must be a list")
        self._chunks: list[tuple[Path, int, str]] = []
        for k, entry in enumerate(chunks):
            if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
                raise ValueError(f"graph source: chunk {k} of '{meta_path}' needs 'file', "
                                 f"'num_edges' and 'sha256'")
            name = entry.get("file", f"edges_{k:05d}.npy")
            count = _count(entry.get("num_edges"), f"chunk {k} 'num_edges'", meta_path, 0)
            path = self.folder / str(name)
            array = _open_npy(path)
            _check_edges(array, path)
            if array.shape[1] != count:
                raise ValueError(f"graph source: chunk '{path}' holds {array.shape[1]} edges, "
                                 f"manifest says {count}")
            self._chunks.append((path, count, entry["sha256"]))
        self.num_edges = sum(c for _, c, _ in self._chunks)
        self._node_names = _names(meta, "node_tensors", meta_path)
        self._edge_names = _names(meta, "edge_tensors", meta_path)
        self._open_tensors()

    def verify_files(self) -> None:
        """Compare every chunk's SHA-256 with the manifest (ValueError naming the chunk)."""
        for path, _, want in self._chunks:
            got = _sha256(path)
            if got != want:
                raise ValueError(f"graph source: chunk '{path}' has sha256 {got}, but the "
                                 f"manifest records {want} (corrupt or modified)")

    def chunks(self, chunk_edges: int) -> Iterator[tuple[int, np.ndarray]]:
        start = 0
        for path, count, _ in self._chunks:
            array = _open_npy(path)
            for a in range(0, count, chunk_edges):
                b = min(a + chunk_edges, count)
                yield start + a, np.asarray(array[:, a:b], dtype=np.int64)
            start += count


def write_chunk_source(folder: str | Path, edge_index: np.ndarray, num_nodes: int,
                       chunk_edges: int, tensors: dict[str, np.ndarray] | None = None,
                       num_classes: int | None = None) -> Path:
    """Write ``edge_index`` as a :class:`ChunkSource` folder (chunks of ``chunk_edges``) with
    node / edge ``tensors`` as ``.npy`` files; return the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for k, a in enumerate(range(0, max(edge_index.shape[1], 1), chunk_edges)):
        name = f"edges_{k:05d}.npy"
        part = np.ascontiguousarray(edge_index[:, a:a + chunk_edges])
        np.save(folder / name, part, allow_pickle=False)
        entries.append({"file": name, "num_edges": int(part.shape[1]),
                        "sha256": _sha256(folder / name)})
    for name, value in (tensors or {}).items():
        np.save(folder / f"{name}.npy", np.ascontiguousarray(value), allow_pickle=False)
    manifest = {"format": "chunks", "num_nodes": int(num_nodes), "chunks": entries,
                "num_classes": num_classes}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return folder


def write_npy_source(folder: str | Path, edge_index: np.ndarray, num_nodes: int,
                     tensors: dict[str, np.ndarray] | None = None,
                     num_classes: int | None = None) -> Path:
    """Write ``edge_index`` and ``tensors`` as an :class:`NpySource` folder (with hashes)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = {"edge_index": edge_index, **(tensors or {})}
    hashes = {}
    for name, value in files.items():
        np.save(folder / f"{name}.npy", np.ascontiguousarray(value), allow_pickle=False)
        hashes[f"{name}.npy"] = _sha256(folder / f"{name}.npy")
    meta = {"format": "npy", "num_nodes": int(num_nodes),
            "num_edges": int(edge_index.shape[1]), "num_classes": num_classes,
            "sha256": hashes}
    (folder / "source.json").write_text(json.dumps(meta, indent=1) + "\n")
    return folder


def open_source(path: str | Path, format: str | None = None) -> EdgeSource:
    """The source at ``path``: ``format`` ``"npy"`` or ``"chunks"``, or ``None`` to pick by
    the file present (``source.json`` or ``manifest.json``)."""
    path = Path(path)
    if format is None:
        format = "chunks" if (path / "manifest.json").exists() else "npy"
    if format == "npy":
        return NpySource(path)
    if format == "chunks":
        return ChunkSource(path)
    raise ValueError(f"unknown source format {format!r} (expected 'npy' or 'chunks')")
