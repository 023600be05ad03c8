"""OGB node-property datasets read from a local folder in OGB's raw CSV layout, with numpy and
gzip only (no ``ogb`` package; nothing is ever downloaded).

Expected layout (what ``ogb`` unpacks, e.g. ``ogbn_arxiv/``)::

    <folder>/raw/edge.csv.gz            E lines "src,dst"
    <folder>/raw/node-feat.csv.gz       N lines of comma-separated floats
    <folder>/raw/node-label.csv.gz      N lines, one label (may be "nan" for unlabelled nodes)
    <folder>/raw/num-node-list.csv.gz   one line: N
    <folder>/raw/num-edge-list.csv.gz   one line: E
    <folder>/raw/edge-feat.csv.gz       optional: E lines of floats (-> edge_attr)
    <folder>/split/<type>/{train,valid,test}.csv.gz   node ids, one per line

A folder in the heterogeneous layout (ogbn-mag: ``raw/num-node-dict.csv.gz`` and
``raw/relations/``) is read into a ``HeteroData`` by
:func:`pyg_sar.datasets.hetero_ogb.ogb_hetero_dataset`, to which :func:`ogb_node_dataset`
hands it.
"""
from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data, HeteroData

from pyg_sar.datasets.ogb_files import find_split_dir as _find_split_dir
from pyg_sar.datasets.ogb_files import read_csv as _read_csv
from pyg_sar.datasets.ogb_files import single_count as _single_count


def ogb_node_dataset(folder: str | os.PathLike, split_type: str | None = None,
                     add_inverse_edge: bool = False, *, masks: bool = True
                     ) -> Data | HeteroData:
    """Read an OGB node-property-prediction dataset from a local folder.

    Args:
        folder: the dataset folder holding ``raw/`` and ``split/`` (see the module docstring).
        split_type: the sub-folder of ``split/`` to use (``"time"``, ``"sales_ranking"``, ...);
            by default the only one present.
        add_inverse_edge: also add every edge reversed (OGB does this for datasets whose
            ``master.csv`` says ``add_inverse_edge``, e.g. ogbn-products); duplicates are removed.
        masks: read the split files into ``train_mask`` / ``val_mask`` / ``test_mask``
            (homogeneous layout; ``False``: the graph alone, as OGB's own ``Data``).

    Returns:
        ``Data`` with ``x`` float32, ``y`` int64 (``-1`` for unlabelled nodes, which are in no
        mask), ``edge_index`` int64, ``train_mask`` / ``val_mask`` / ``test_mask`` from the
        split files, and ``edge_attr`` float32 if ``edge-feat.csv.gz`` exists. For a folder
        in the heterogeneous layout (``raw/num-node-dict.csv.gz``), the ``HeteroData`` of
        :func:`~pyg_sar.datasets.hetero_ogb.ogb_hetero_dataset` (``add_inverse_edge`` then
        applies ``ToUndirected()``).
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise ValueError(f"ogb: dataset folder {folder} does not exist")
    raw = folder / "raw"
    if (raw / "num-node-dict.csv.gz").is_file():
        from pyg_sar.datasets.hetero_ogb import ogb_hetero_dataset
        return ogb_hetero_dataset(folder, split_type, add_reverse_edges=add_inverse_edge)
    num_nodes = _single_count(raw / "num-node-list.csv.gz")
    num_edges = _single_count(raw / "num-edge-list.csv.gz")

    edges = _read_csv(raw / "edge.csv.gz", np.int64, 2)
    if edges.shape != (num_edges, 2) and not (num_edges == 0 and edges.size == 0):
        raise ValueError(f"ogb: edge.csv.gz has shape {edges.shape}, expected ({num_edges}, 2) "
                         f"from num-edge-list.csv.gz")
    edge_index = torch.from_numpy(edges.reshape(-1, 2).T.copy())
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise ValueError(f"ogb: edge.csv.gz has node ids in [{int(edge_index.min())}, "
                         f"{int(edge_index.max())}] but there are {num_nodes} nodes")

    x = _read_csv(raw / "node-feat.csv.gz", np.float32, 2)
    if x.shape[0] != num_nodes:
        raise ValueError(f"ogb: node-feat.csv.gz has {x.shape[0]} rows, expected {num_nodes}")

    y = _labels(raw, num_nodes)

    data = Data(x=torch.from_numpy(x), y=y, edge_index=edge_index)
    edge_feat = raw / "edge-feat.csv.gz"
    if edge_feat.is_file():
        edge_attr = _read_csv(edge_feat, np.float32, 2)
        if edge_attr.shape[0] != num_edges:
            raise ValueError(f"ogb: edge-feat.csv.gz has {edge_attr.shape[0]} rows, expected "
                             f"{num_edges}")
        data.edge_attr = torch.from_numpy(edge_attr)

    if masks:
        for mask_name, mask in _masks(folder, split_type, y, num_nodes).items():
            data[mask_name] = mask

    if add_inverse_edge:
        if "edge_attr" in data:
            both = torch.cat([data.edge_attr, data.edge_attr])
        both_index = torch.cat([edge_index, edge_index.flip(0)], dim=1)
        keys, first = _unique_first(both_index[0] * num_nodes + both_index[1])
        data.edge_index = torch.stack([keys // num_nodes, keys % num_nodes])
        if "edge_attr" in data:
            data.edge_attr = both[first]
    return data


def _labels(raw: Path, num_nodes: int) -> torch.Tensor:
    """``y`` (int64, ``-1`` for unlabelled nodes) from ``node-label.csv.gz``."""
    labels = _read_csv(raw / "node-label.csv.gz", np.float64, 2)
    if labels.shape != (num_nodes, 1):
        raise ValueError(f"ogb: node-label.csv.gz has shape {labels.shape}, expected "
                         f"({num_nodes}, 1) (multi-task labels are not supported)")
    labels = labels[:, 0]
    labelled = ~np.isnan(labels)
    if np.any(labels[labelled] != np.round(labels[labelled])) or np.any(labels[labelled] < 0):
        raise ValueError("ogb: node-label.csv.gz must hold non-negative integer class labels")
    y = torch.from_numpy(np.where(labelled, labels, -1).astype(np.int64))
    return y


def _masks(folder: Path, split_type: str | None, y: torch.Tensor,
           num_nodes: int) -> dict[str, torch.Tensor]:
    """``train_mask`` / ``val_mask`` / ``test_mask`` from the split files."""
    masks = {}
    split_dir = _find_split_dir(folder, split_type)
    for file_name, mask_name in (("train", "train_mask"), ("valid", "val_mask"),
                                 ("test", "test_mask")):
        path = split_dir / f"{file_name}.csv.gz"
        idx = torch.from_numpy(_read_csv(path, np.int64, 1))
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= num_nodes):
            raise ValueError(f"ogb: {path} has node ids in [{int(idx.min())}, "
                             f"{int(idx.max())}] but there are {num_nodes} nodes")
        if idx.numel() and bool((y[idx] < 0).any()):
            raise ValueError(f"ogb: {path} lists nodes without a label")
        mask = torch.zeros(num_nodes, dtype=torch.bool)
        mask[idx] = True
        masks[mask_name] = mask
    return masks


def _csv_chunks(path: Path, dtype: type, rows: int):
    """``path``'s rows as 2-D arrays of at most ``rows`` rows each (never the whole file)."""
    import itertools
    if not path.is_file():
        raise ValueError(f"ogb: {path} is missing")
    with gzip.open(path, "rt") as f:
        while lines := list(itertools.islice(f, rows)):
            try:
                yield np.loadtxt(lines, delimiter=",", dtype=dtype, ndmin=2)
            except ValueError as e:
                raise ValueError(f"ogb: cannot parse {path}: {e}") from e


def ogb_to_source(folder: str | os.PathLike, out: str | os.PathLike,
                  split_type: str | None = None, chunk_edges: int = 8_000_000) -> Path:
    """Convert an OGB node-property folder (module docstring) into a
    :class:`~pyg_sar.partition.sources.ChunkSource` folder for
    :func:`~pyg_sar.partition.stream.write_partition_streaming`, reading ``edge.csv.gz`` and
    ``node-feat.csv.gz`` in chunks (never whole). The graph is stored as given (no inverse
    edges added); ``x`` float32, ``y`` int64 (``-1`` unlabelled), the split masks.
    """
    import hashlib
    import json
    folder, out = Path(folder), Path(out)
    raw = folder / "raw"
    num_nodes = _single_count(raw / "num-node-list.csv.gz")
    num_edges = _single_count(raw / "num-edge-list.csv.gz")
    y = _labels(raw, num_nodes)
    masks = _masks(folder, split_type, y, num_nodes)
    out.mkdir(parents=True, exist_ok=True)
    chunks, seen = [], 0
    for k, edges in enumerate(_csv_chunks(raw / "edge.csv.gz", np.int64, chunk_edges)):
        if edges.shape[1] != 2:
            raise ValueError(f"ogb: edge.csv.gz has {edges.shape[1]} columns, expected 2")
        name = f"edges_{k:05d}.npy"
        np.save(out / name, np.ascontiguousarray(edges.T), allow_pickle=False)
        digest = hashlib.sha256((out / name).read_bytes()).hexdigest()
        chunks.append({"file": name, "num_edges": int(edges.shape[0]), "sha256": digest})
        seen += int(edges.shape[0])
    if seen != num_edges:
        raise ValueError(f"ogb: edge.csv.gz has {seen} rows, expected {num_edges} from "
                         f"num-edge-list.csv.gz")
    x, row = None, 0
    for block in _csv_chunks(raw / "node-feat.csv.gz", np.float32, 1_000_000):
        if x is None:
            x = np.lib.format.open_memmap(out / "x.npy", mode="w+", dtype=np.float32,
                                          shape=(num_nodes, block.shape[1]))
        if row + block.shape[0] > num_nodes:
            raise ValueError(f"ogb: node-feat.csv.gz has more than {num_nodes} rows")
        x[row:row + block.shape[0]] = block
        row += block.shape[0]
    if row != num_nodes:
        raise ValueError(f"ogb: node-feat.csv.gz has {row} rows, expected {num_nodes}")
    x.flush()
    del x
    np.save(out / "y.npy", y.numpy(), allow_pickle=False)
    for name, mask in masks.items():
        np.save(out / f"{name}.npy", mask.numpy(), allow_pickle=False)
    manifest = {"format": "chunks", "num_nodes": num_nodes, "chunks": chunks,
                "node_tensors": ["x", "y", *masks]}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return out


def _unique_first(keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Sorted distinct ``keys`` and, for each, the index of its first occurrence."""
    uniq, inverse = torch.unique(keys, return_inverse=True)
    first = torch.full((uniq.numel(),), keys.numel(), dtype=torch.long)
    first.scatter_reduce_(0, inverse, torch.arange(keys.numel()), reduce="amin")
    return uniq, first
