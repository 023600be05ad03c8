"""Heterogeneous OGB node-property datasets (ogbn-mag's layout) read from a local folder into a
``HeteroData``, with numpy and gzip only (no ``ogb`` package; nothing is ever downloaded).

Expected layout (what ``ogb`` unpacks for ogbn-mag, e.g. ``mag/``)::

    <folder>/raw/num-node-dict.csv.gz        header: the node types; one row: their counts
    <folder>/raw/triplet-type-list.csv.gz    lines "src,rel,dst" (optional: without it, the
                                             folders under relations/ are the edge types)
    <folder>/raw/relations/<src>___<rel>___<dst>/edge.csv.gz          E lines "src_id,dst_id"
    <folder>/raw/relations/<src>___<rel>___<dst>/num-edge-list.csv.gz one line: E
    <folder>/raw/relations/<src>___<rel>___<dst>/edge-feat.csv.gz     optional -> edge_attr
    <folder>/raw/node-feat/<type>/node-feat.csv.gz    optional: N lines of floats -> x
    <folder>/raw/node-feat/<type>/node_year.csv.gz    optional: N lines, one year -> year
    <folder>/raw/nodetype-has-label.csv.gz   header: node types; one row: True/False
                                             (optional: without it, the types that have
                                             node-label/<type>/)
    <folder>/raw/node-label/<type>/node-label.csv.gz  N lines, one label ("nan": unlabelled)
    <folder>/split/<split_type>/nodetype-has-split.csv.gz        as nodetype-has-label
                                                                (optional likewise)
    <folder>/split/<split_type>/<type>/{train,valid,test}.csv.gz  node ids of that type

Ids in every file are per node type (0 .. N_type - 1), as OGB numbers them. Other files (for
example ``edge_reltype.csv.gz``) are ignored.
"""
from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import HeteroData

from pyg_sar.datasets.hetero_validate import check_hetero
from pyg_sar.datasets.ogb_files import find_split_dir as _find_split_dir
from pyg_sar.datasets.ogb_files import read_csv as _read_csv

_SEP = "___"


def _read_header_table(path: Path) -> dict[str, str]:
    """A gzipped CSV of one header row (names) and exactly one data row (values)."""
    if not path.is_file():
        raise ValueError(f"ogb: {path} is missing")
    with gzip.open(path, "rt") as f:
        lines = [line.strip() for line in f if line.strip()]
    if len(lines) != 2:
        raise ValueError(f"ogb: {path} must hold a header row and one value row (got "
                         f"{len(lines)} non-empty lines; a node-property dataset has exactly "
                         f"one graph)")
    names = [n.strip() for n in lines[0].split(",")]
    values = [v.strip() for v in lines[1].split(",")]
    if len(names) != len(values) or len(set(names)) != len(names) or not all(names):
        raise ValueError(f"ogb: {path}: header {names} does not match the values {values}")
    return dict(zip(names, values))


def _flag(path: Path, name: str, value: str) -> bool:
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0"):
        return False
    raise ValueError(f"ogb: {path}: node type {name!r} has {value!r}, expected True or False")


def _typed_flags(path: Path, folder: Path, node_types: list[str]) -> list[str]:
    """The node types marked True in ``path`` (nodetype-has-label / -has-split), or, if the
    file is absent, those with a sub-folder in ``folder``."""
    if path.is_file():
        flags = _read_header_table(path)
        unknown = sorted(set(flags) - set(node_types))
        if unknown:
            raise ValueError(f"ogb: {path} names node types {unknown} that are not in "
                             f"num-node-dict.csv.gz ({node_types})")
        return [t for t in node_types if t in flags and _flag(path, t, flags[t])]
    return [t for t in node_types if (folder / t).is_dir()]


def _edge_types(raw: Path, node_types: list[str]) -> list[tuple[str, str, str]]:
    listing = raw / "triplet-type-list.csv.gz"
    relations = raw / "relations"
    if listing.is_file():
        with gzip.open(listing, "rt") as f:
            rows = [line.strip() for line in f if line.strip()]
        triplets = []
        for row in rows:
            parts = tuple(p.strip() for p in row.split(","))
            if len(parts) != 3 or not all(parts):
                raise ValueError(f"ogb: {listing}: line {row!r} is not 'src,rel,dst'")
            triplets.append(parts)
    else:
        if not relations.is_dir():
            raise ValueError(f"ogb: {relations} is missing (and there is no {listing.name})")
        triplets = []
        for p in sorted(relations.iterdir()):
            if not p.is_dir():
                continue
            parts = tuple(p.name.split(_SEP))
            if len(parts) != 3 or not all(parts):
                raise ValueError(f"ogb: {p} is not named <src>{_SEP}<rel>{_SEP}<dst>")
            triplets.append(parts)
    if len(set(triplets)) != len(triplets):
        raise ValueError(f"ogb: edge types listed twice in {raw}: {triplets}")
    for triplet in triplets:
        for role, node_type in (("source", triplet[0]), ("destination", triplet[2])):
            if node_type not in node_types:
                raise ValueError(f"ogb: edge type {triplet}: its {role} node type "
                                 f"{node_type!r} is not in num-node-dict.csv.gz "
                                 f"({node_types})")
    return sorted(triplets)


def _node_type_order(node_types: list[str], labelled: list[str],
                     edge_types: list[tuple[str, str, str]]) -> list[str]:
    """Labelled types first, then the others as they first appear in the sorted edge types,
    then the rest in the file's order (for ogbn-mag: PyG's ``OGB_MAG`` order)."""
    order = list(labelled)
    for src, _, dst in edge_types:
        for t in (src, dst):
            if t not in order:
                order.append(t)
    return order + [t for t in node_types if t not in order]


def ogb_hetero_dataset(folder: str | os.PathLike, split_type: str | None = None,
                       add_reverse_edges: bool = False) -> HeteroData:
    """Read a heterogeneous OGB node-property dataset (ogbn-mag's layout) from a local folder.

    Args:
        folder: the dataset folder holding ``raw/`` and ``split/`` (see the module docstring).
        split_type: the sub-folder of ``split/`` to use (``"time"`` for ogbn-mag); by default
            the only one present.
        add_reverse_edges: apply ``torch_geometric.transforms.ToUndirected()`` afterwards
            (reverse edge types ``rev_<rel>``; edge types within one node type made
            symmetric), as PyG's OGB-MAG examples do.

    Returns:
        ``HeteroData``: per node type ``num_nodes``, ``x`` float32 where ``node-feat`` exists,
        ``year`` int64 where ``node_year`` exists, and for labelled types ``y`` int64 (``-1``
        for unlabelled nodes, which are in no mask) with ``train_mask`` / ``val_mask`` /
        ``test_mask`` from the split (types without a split get none); per edge type
        ``edge_index`` int64 in the file's order and ``edge_attr`` float32 where
        ``edge-feat`` exists.

    Raises:
        ValueError: naming the file, the node or edge type, and the value.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise ValueError(f"ogb: dataset folder {folder} does not exist")
    raw = folder / "raw"
    count_path = raw / "num-node-dict.csv.gz"
    counts = {}
    for name, value in _read_header_table(count_path).items():
        try:
            counts[name] = int(value)
        except ValueError:
            raise ValueError(f"ogb: {count_path}: node type {name!r} has count {value!r}, "
                             f"expected an integer") from None
        if counts[name] < 0:
            raise ValueError(f"ogb: {count_path}: node type {name!r} has count {value}")
    node_types = list(counts)
    edge_types = _edge_types(raw, node_types)
    labelled = _typed_flags(raw / "nodetype-has-label.csv.gz", raw / "node-label", node_types)

    data = HeteroData()
    for t in _node_type_order(node_types, labelled, edge_types):
        store = data[t]
        store.num_nodes = counts[t]
        feat = raw / "node-feat" / t / "node-feat.csv.gz"
        if feat.is_file():
            x = _read_csv(feat, np.float32, 2)
            if x.shape[0] != counts[t]:
                raise ValueError(f"ogb: {feat} has {x.shape[0]} rows, expected {counts[t]} "
                                 f"for node type {t!r}")
            store.x = torch.from_numpy(x)
        year_path = raw / "node-feat" / t / "node_year.csv.gz"
        if year_path.is_file():
            year = _read_csv(year_path, np.int64, 2)
            if year.shape != (counts[t], 1):
                raise ValueError(f"ogb: {year_path} has shape {year.shape}, expected "
                                 f"({counts[t]}, 1) for node type {t!r}")
            store.year = torch.from_numpy(year[:, 0].copy())
    for t in labelled:
        path = raw / "node-label" / t / "node-label.csv.gz"
        labels = _read_csv(path, np.float64, 2)
        if labels.shape != (counts[t], 1):
            raise ValueError(f"ogb: {path} has shape {labels.shape}, expected ({counts[t]}, 1) "
                             f"for node type {t!r} (multi-task labels are not supported)")
        labels = labels[:, 0]
        known = ~np.isnan(labels)
        if np.any(labels[known] != np.round(labels[known])) or np.any(labels[known] < 0):
            raise ValueError(f"ogb: {path} must hold non-negative integer class labels")
        data[t].y = torch.from_numpy(np.where(known, labels, -1).astype(np.int64))

    for triplet in edge_types:
        sub = raw / "relations" / _SEP.join(triplet)
        count = _read_csv(sub / "num-edge-list.csv.gz", np.int64, 1)
        if count.size != 1:
            raise ValueError(f"ogb: {sub / 'num-edge-list.csv.gz'} lists {count.size} graphs; "
                             f"a node-property dataset has exactly one")
        num_edges = int(count[0])
        edges = _read_csv(sub / "edge.csv.gz", np.int64, 2)
        if edges.shape != (num_edges, 2) and not (num_edges == 0 and edges.size == 0):
            raise ValueError(f"ogb: {sub / 'edge.csv.gz'} has shape {edges.shape}, expected "
                             f"({num_edges}, 2) for edge type {triplet}")
        data[triplet].edge_index = torch.from_numpy(edges.reshape(-1, 2).T.copy())
        feat = sub / "edge-feat.csv.gz"
        if feat.is_file():
            attr = _read_csv(feat, np.float32, 2)
            if attr.shape[0] != num_edges:
                raise ValueError(f"ogb: {feat} has {attr.shape[0]} rows, expected {num_edges} "
                                 f"for edge type {triplet}")
            data[triplet].edge_attr = torch.from_numpy(attr)

    split_root = folder / "split"
    if labelled and split_root.is_dir():
        split_dir = _find_split_dir(folder, split_type)
        for t in _typed_flags(split_dir / "nodetype-has-split.csv.gz", split_dir, node_types):
            if t not in labelled:
                raise ValueError(f"ogb: {split_dir} has a split for node type {t!r}, which has "
                                 f"no labels")
            y = data[t].y
            for file_name, mask_name in (("train", "train_mask"), ("valid", "val_mask"),
                                         ("test", "test_mask")):
                path = split_dir / t / f"{file_name}.csv.gz"
                idx = torch.from_numpy(_read_csv(path, np.int64, 1))
                if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= counts[t]):
                    raise ValueError(f"ogb: {path} has node ids in [{int(idx.min())}, "
                                     f"{int(idx.max())}] but node type {t!r} has {counts[t]} "
                                     f"nodes")
                if idx.numel() and bool((y[idx] < 0).any()):
                    raise ValueError(f"ogb: {path} lists {t!r} nodes without a label")
                mask = torch.zeros(counts[t], dtype=torch.bool)
                mask[idx] = True
                data[t][mask_name] = mask
    elif split_type is not None:
        raise ValueError(f"ogb: split folder {split_root / split_type} is missing")

    check_hetero(data, where=f"ogb: {folder}")
    if add_reverse_edges:
        import torch_geometric.transforms as T
        data = T.ToUndirected()(data)
    return data
