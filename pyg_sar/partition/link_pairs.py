"""The pieces of a partitioned link-prediction split that the homogeneous
(:mod:`pyg_sar.partition.link_split`) and heterogeneous
(:mod:`pyg_sar.partition.link_split`) writers and loaders share: the names on disk,
the checks of the input triple and its pair sets (leakage included), the writing and reading
of pair sets. See :mod:`pyg_sar.partition.link_split` for the layout."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np
import torch
from torch import Tensor

from pyg_sar.partition import storage

SPLITS = ("train", "val", "test")
LINK_META = "link.json"
GRAPH_DIR = "graph"
LEVEL_KEY = "link_mp_level"
LINK_FORMAT = "pyg_sar-link-split"
LINK_VERSION = 2
HETERO_LINK_VERSION = 3  # a heterogeneous split: pair sets per edge type (write_hetero_link_split)
# version 1: one pair set, "edge_label", described on the split; version 3: heterogeneous
READS_VERSIONS = (1, 2, 3)
# The pair sets a split may hold, by their label's name: RandomLinkSplit(split_labels=False)
# gives "edge_label", split_labels=True "pos_edge_label" and (when it drew negatives for
# that split) "neg_edge_label". Each set is "{set}_index" [2, n], "{set}" [n, *] and, once
# partitioned, "{set}_ids" [n] (positions in the input split's "{set}_index").
PAIR_SETS = ("edge_label", "pos_edge_label", "neg_edge_label")
_SUPPORTED = ("the (train_data, val_data, test_data) triple of PyG's RandomLinkSplit on a "
              "Data, or on a HeteroData with edge_types= (and rev_edge_types=) "
              "(split_labels=False: edge_label_index / edge_label; "
              "split_labels=True: pos_edge_label_index / pos_edge_label and "
              "neg_edge_label_index / neg_edge_label; any add_negative_train_samples, "
              "neg_sampling_ratio, disjoint_train_ratio, is_undirected)")
# Node counts of a pair set / edge set: N (one node set) or (N_src, N_dst) (two node types).
Nodes = Union[int, tuple[int, int]]


def _pair_keys(label: str) -> tuple[str, str, str]:
    """``(index, label, ids)`` attribute names of the pair set ``label``."""
    return f"{label}_index", label, f"{label}_ids"


def pair_sets_of(d: Any) -> list[str]:
    """The pair sets (names in :data:`PAIR_SETS`) that one split ``d`` (a ``Data``, or one
    edge type's store of a ``HeteroData``) holds."""
    return [s for s in PAIR_SETS if f"{s}_index" in d]


def is_link_split(data: Any) -> bool:
    """Whether ``data`` looks like the ``(train, val, test)`` triple of PyG's
    ``RandomLinkSplit``: three ``Data``, or three ``HeteroData``."""
    from torch_geometric.data import Data, HeteroData
    if not isinstance(data, (tuple, list)) or len(data) != 3:
        return False
    if all(isinstance(d, HeteroData) for d in data):
        return True
    return all(isinstance(d, Data) for d in data) and any(pair_sets_of(d) for d in data)


def check_link_split(triple: Any) -> None:
    """Raise a ``ValueError`` naming what is supported unless ``triple`` is a supported
    homogeneous link split (see the module docstring; a heterogeneous one is checked by
    :func:`~pyg_sar.partition.link_split.write_hetero_link_split`)."""
    from torch_geometric.data import HeteroData
    if any(isinstance(d, HeteroData) for d in triple):
        raise ValueError(f"partition_graph: a link split mixing HeteroData and Data is not "
                         f"supported; supported is {_SUPPORTED}")
    for split, d in zip(SPLITS, triple):
        if not pair_sets_of(d):
            raise ValueError(f"partition_graph: the {split} split has no supervision pairs "
                             f"(none of {[f'{s}_index' for s in PAIR_SETS]}); supported is "
                             f"{_SUPPORTED}")


def is_link_folder(path: str | Path) -> bool:
    """Whether ``path`` holds a partitioned link split (it has ``link.json``)."""
    return (Path(path) / LINK_META).is_file()


def link_file(split: str, rank: int, name: str) -> str:
    """Relative path of one split's pair tensor for ``rank``."""
    return f"link/{split}/part{rank}/{name}.npy"


def hetero_link_file(split: str, edge_type_index: int, rank: int, name: str) -> str:
    """Relative path of one split's pair tensor of edge type ``edge_type_index`` (its position
    in the graph's ``meta.json``) for ``rank``."""
    return f"link/{split}/etype{edge_type_index}/part{rank}/{name}.npy"


def random_link_split(data: Any, num_val: float = 0.1, num_test: float = 0.1, *,
                      seed: int = 0, is_undirected: bool = True,
                      disjoint_train_ratio: float = 0.0,
                      add_negative_train_samples: bool = False) -> tuple:
    """PyG's ``RandomLinkSplit`` of ``data`` with the CPU random generators it draws from
    (torch's, and Python's and NumPy's, which its negative sampling uses) seeded by ``seed``:
    the same split on every rank and in every run. Their states are restored afterwards."""
    import random

    import torch_geometric.transforms as T
    transform = T.RandomLinkSplit(num_val=num_val, num_test=num_test,
                                  is_undirected=is_undirected,
                                  disjoint_train_ratio=disjoint_train_ratio,
                                  add_negative_train_samples=add_negative_train_samples)
    states = torch.random.get_rng_state(), random.getstate(), np.random.get_state()
    try:
        torch.manual_seed(seed)
        random.seed(seed)
        np.random.seed(seed % 2**32)
        return transform(data)
    finally:
        torch.random.set_rng_state(states[0])
        random.setstate(states[1])
        np.random.set_state(states[2])


# --- checks -------------------------------------------------------------------------------

def _dims(num_nodes: Nodes) -> tuple[int, int]:
    """``(N_src, N_dst)`` of ``N`` (one node set) or of such a pair (two node types)."""
    if isinstance(num_nodes, tuple):
        return int(num_nodes[0]), int(num_nodes[1])
    return int(num_nodes), int(num_nodes)


def _nodes_text(num_nodes: Nodes) -> str:
    if isinstance(num_nodes, tuple):
        return f"{num_nodes[0]} source and {num_nodes[1]} destination nodes"
    return f"{num_nodes} nodes"


def _edges(t: Tensor, num_nodes: Nodes, what: str) -> np.ndarray:
    if not isinstance(t, Tensor) or t.dim() != 2 or t.size(0) != 2 or \
            t.dtype.is_floating_point or t.dtype == torch.bool:
        raise ValueError(f"partition_graph: {what} must be an integer tensor of shape [2, E] "
                         f"(got {getattr(t, 'dtype', type(t).__name__)} "
                         f"{list(getattr(t, 'shape', []))})")
    a = t.detach().cpu().numpy().astype(np.int64, copy=False)
    n_src, n_dst = _dims(num_nodes)
    if a.size:
        bad = np.flatnonzero((a < 0).any(0) | (a[0] >= n_src) | (a[1] >= n_dst))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"partition_graph: {what} has the pair ({a[0, i]}, {a[1, i]}) at "
                             f"column {i}, out of range for {_nodes_text(num_nodes)}")
    return a


def _codes(src: np.ndarray, dst: np.ndarray, num_dst: int) -> np.ndarray:
    """One int64 per pair: ``src * N_dst + dst``."""
    return src * num_dst + dst


def _occurrence_keys(edges: np.ndarray, num_nodes: Nodes, width: int) -> np.ndarray:
    """One int64 per edge: (src * N_dst + dst) * width + its occurrence number among equal
    edges, so that multisets of edges compare as sets."""
    key = _codes(edges[0], edges[1], _dims(num_nodes)[1])
    order = np.argsort(key, kind="stable")
    sk = key[order]
    starts = np.r_[True, sk[1:] != sk[:-1]] if sk.size else np.zeros(0, bool)
    first = np.maximum.accumulate(np.where(starts, np.arange(sk.size), 0)) if sk.size else sk
    occ = np.empty_like(key)
    occ[order] = np.arange(sk.size) - first
    return key * width + occ


def _max_multiplicity(edges: np.ndarray, num_nodes: Nodes) -> int:
    if not edges.size:
        return 1
    _, counts = np.unique(_codes(edges[0], edges[1], _dims(num_nodes)[1]), return_counts=True)
    return int(counts.max())


def mp_levels(train: np.ndarray, val: np.ndarray, test: np.ndarray,
              num_nodes: Nodes, of: str = "") -> np.ndarray:
    """For every edge of ``test`` (stored order): 0 if it is one of train's edges, 1 if one
    of val's only, 2 if test's only (multisets: a repeated edge counts once per copy).
    ``num_nodes``: ``N``, or ``(N_src, N_dst)`` for an edge type between two node types;
    ``of`` names the edge type in errors."""
    width = _max_multiplicity(test, num_nodes) + 1
    n_src, n_dst = _dims(num_nodes)
    if n_src > 0 and n_dst > 0 and float(n_src) * n_dst * width >= 2.0 ** 62:
        raise ValueError(f"partition_graph: link split of {_nodes_text(num_nodes)} is too "
                         f"large for 64-bit edge keys")
    keys = {name: _occurrence_keys(e, num_nodes, width)
            for name, e in (("train", train), ("val", val), ("test", test))}
    level = np.full(test.shape[1], 2, dtype=np.int8)
    for name, value, sub, sup in (("val", 1, val, "test"), ("train", 0, train, "val")):
        inside = np.isin(keys[name], keys[sup])
        if not inside.all():
            i = int(np.flatnonzero(~inside)[0])
            raise ValueError(f"partition_graph: the {name} split's {of}message-passing "
                             f"edge ({sub[0, i]}, {sub[1, i]}) is not in the {sup} split's "
                             f"message-passing edges; a link split gives each split the "
                             f"edges of the one before it (train within val within test), "
                             f"as RandomLinkSplit does")
        level[np.isin(keys["test"], keys[name])] = value
    return level


def _is_undirected(edges: np.ndarray, num_nodes: int) -> bool:
    key = np.unique(edges[0] * num_nodes + edges[1])
    rev = np.unique(edges[1] * num_nodes + edges[0])
    return key.size == rev.size and bool((key == rev).all())


def check_no_leakage(split: str, pairs: np.ndarray, labels: Tensor, mp: np.ndarray,
                     num_nodes: Nodes, undirected: bool, reverse: Optional[np.ndarray] = None,
                     of: str = "") -> None:
    """Refuse positive supervision pairs of ``split`` that are edges of its message passing:
    of ``mp`` (in either direction when ``undirected``), or, reversed, of ``reverse`` (the
    edges of a reverse edge type, destination type to source type; ``num_nodes`` is then
    ``(N_src, N_dst)``). ``of`` names the edge type in the error."""
    positive = (labels.detach().cpu().reshape(labels.size(0), -1) != 0).any(1).numpy()
    pos = pairs[:, positive]
    if not pos.size:
        return
    n_src, n_dst = _dims(num_nodes)
    mp_keys = _codes(mp[0], mp[1], n_dst)
    leaked = np.isin(_codes(pos[0], pos[1], n_dst), mp_keys)
    if undirected:
        leaked |= np.isin(_codes(pos[1], pos[0], n_dst), mp_keys)
    if reverse is not None and reverse.size:
        leaked |= np.isin(_codes(pos[1], pos[0], n_src), _codes(reverse[0], reverse[1], n_src))
    if leaked.any():
        i = int(np.flatnonzero(leaked)[0])
        where = "" if reverse is None else " (or, reversed, of its reverse edge type)"
        raise ValueError(f"partition_graph: the {split} split leaks supervision edges into "
                         f"message passing: its {of}positive pair ({pos[0, i]}, {pos[1, i]}) "
                         f"is an edge of the {split} split's {of}edge_index{where} "
                         f"({int(leaked.sum())} such pairs); supervision edges must be held "
                         f"out of the graph the model propagates over")


_PAIR_ATTRS = frozenset(k for s in PAIR_SETS for k in _pair_keys(s))


def _check_same_nodes(triple: tuple) -> int:
    train = triple[0]
    num_nodes = train.num_nodes
    for name, d in zip(SPLITS[1:], triple[1:]):
        if d.num_nodes != num_nodes:
            raise ValueError(f"partition_graph: the {name} split has {d.num_nodes} nodes, the "
                             f"train split {num_nodes}; a link split's three parts share their "
                             f"nodes")
        for key in train.keys():
            if key == "edge_index" or key in _PAIR_ATTRS or \
                    not isinstance(train[key], Tensor) or not train.is_node_attr(key):
                continue
            other = d[key] if key in d else None
            if not _same_tensor(other, train[key]):
                raise ValueError(f"partition_graph: node tensor {key!r} of the {name} split "
                                 f"differs from the train split's; a link split's three parts "
                                 f"hold the same node tensors")
    return int(num_nodes)


def _same_tensor(a: Any, b: Tensor) -> bool:
    """``a`` is ``b`` (RandomLinkSplit shares the node tensors) or equal to it, NaN equal to
    NaN (features with missing values are still the same features)."""
    if a is b:
        return True
    if not isinstance(a, Tensor) or a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return bool(torch.isclose(a, b, rtol=0, atol=0, equal_nan=True).all())
    return torch.equal(a, b)


def _pairs(d: Any, split: str, num_nodes: Nodes, label_key: str = "edge_label",
           of: str = "") -> tuple[np.ndarray, Tensor]:
    index_key = _pair_keys(label_key)[0]
    pairs = _edges(d[index_key], num_nodes, f"the {split} split's {of}{index_key}")
    if label_key in d:
        label = d[label_key]
    else:  # RandomLinkSplit always sets the labels; a hand-made split may leave them out
        fill = torch.zeros if label_key.startswith("neg_") else torch.ones
        label = fill(pairs.shape[1])
    if not isinstance(label, Tensor) or label.dim() < 1 or label.size(0) != pairs.shape[1]:
        raise ValueError(f"partition_graph: the {split} split's {of}{label_key} must have "
                         f"one row per pair ({pairs.shape[1]}), got "
                         f"{list(getattr(label, 'shape', []))}")
    return pairs, label


def _positive(label_key: str, label: Tensor) -> Tensor:
    """The labels :func:`check_no_leakage` reads: a ``pos_`` set is all positive, a ``neg_``
    set all negative, a mixed set positive where its label is non-zero."""
    if label_key.startswith("pos_"):
        return torch.ones(label.size(0))
    if label_key.startswith("neg_"):
        return torch.zeros(label.size(0))
    return label


# --- writing ------------------------------------------------------------------------------

PairSets = dict[tuple[str, str], tuple[np.ndarray, Tensor]]


def checked_pair_sets(stores: Any, num_nodes: Nodes, mp: list[np.ndarray], undirected: bool,
                      reverse: Optional[list[np.ndarray]] = None, of: str = "") -> PairSets:
    """``{(split, set): (pairs [2, n], labels)}`` of the three splits' ``stores`` (the
    ``Data`` themselves, or one edge type's store of each ``HeteroData``), the validation and
    test positives checked for leakage into their split's message-passing edges ``mp[i]``
    (and, reversed, into ``reverse[i]``, a reverse edge type's)."""
    pairs: PairSets = {}
    for i, (split, d) in enumerate(zip(SPLITS, stores)):
        for label_key in pair_sets_of(d):
            pair, label = pairs[split, label_key] = _pairs(d, split, num_nodes, label_key, of)
            if split != "train":
                check_no_leakage(split, pair, _positive(label_key, label), mp[i], num_nodes,
                                 undirected, None if reverse is None else reverse[i], of)
    return pairs


def write_pair_sets(tmp: Path, files: dict, pairs: PairSets, new_src: np.ndarray,
                    new_dst: np.ndarray, src_offsets: np.ndarray,
                    rel_of: Callable[[str, int, str], str]) -> dict[str, dict[str, dict]]:
    """Write every pair set of ``pairs`` per owner rank (the rank owning the pair's source,
    ``src_offsets`` the source set's new-id ranges) in new ids (``new_src`` / ``new_dst``:
    new id of every original source / destination id) under ``tmp`` at ``rel_of(split, rank,
    name)``, recording checksums in ``files``; return ``{split: {set: description}}``."""
    out: dict[str, dict[str, dict]] = {}
    for (split, label_key), (pair, label) in pairs.items():
        index_key, _, ids_key = _pair_keys(label_key)
        new_pairs = np.stack([new_src[pair[0]], new_dst[pair[1]]]).astype(np.int64)
        owner = np.searchsorted(src_offsets, new_pairs[0], side="right") - 1
        label_np = storage.to_storage(label.detach().cpu())
        counts = []
        for r in range(len(src_offsets) - 1):
            ids = np.flatnonzero(owner == r).astype(np.int64)
            arrays = {index_key: np.ascontiguousarray(new_pairs[:, ids]),
                      label_key: np.ascontiguousarray(label_np[ids]),
                      ids_key: ids}
            for name, array in arrays.items():
                rel = rel_of(split, r, name)
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                files[rel] = storage.save_npy(tmp / rel, array)
            counts.append(int(ids.size))
        out.setdefault(split, {})[label_key] = {
            "num_pairs": int(pair.shape[1]), "part_num_pairs": counts,
            "label_dtype": storage.dtype_name(label.dtype),
            "label_shape": list(label.shape[1:])}
    return out


def read_pairs(root: Path, files: dict, info: dict, label_key: str, rank: int,
               rel_of: Callable[[str], str], num_nodes: Nodes) -> dict[str, Tensor]:
    """Rank ``rank``'s pairs of one pair set (``info``: its description in ``link.json``;
    ``rel_of(name)``: the relative path of its tensor ``name``; ``num_nodes``: ``N`` or
    ``(N_src, N_dst)``, the range of the ids): ``{set}_index``, ``{set}``, ``{set}_ids``."""
    index_key, _, ids_key = _pair_keys(label_key)
    n = int(info["part_num_pairs"][rank])
    label_dtype = storage.parse_dtype(info["label_dtype"])
    shapes = {index_key: (2, n), label_key: (n, *info["label_shape"]), ids_key: (n,)}
    out = {}
    for name in (index_key, label_key, ids_key):
        rel = rel_of(name)
        if rel not in files:
            raise ValueError(f"'{root / LINK_META}' lists no checksum for {rel}")
        array = storage.load_npy(root / rel, files[rel])
        if tuple(array.shape) != shapes[name]:
            raise ValueError(f"'{root / rel}' has shape {list(array.shape)}, expected "
                             f"{list(shapes[name])}")
        out[name] = (storage.from_storage(array, label_dtype) if name == label_key
                     else torch.from_numpy(np.asarray(array, dtype=np.int64)))
    ids = out[index_key]
    for row, high in enumerate(_dims(num_nodes)):
        if ids.numel() and (int(ids[row].min()) < 0 or int(ids[row].max()) >= high):
            raise ValueError(f"'{root / rel_of(index_key)}' holds node ids outside "
                             f"[0, {high})")
    return out


def split_masks(level: Tensor, same_graph: dict) -> dict[str, Optional[Tensor]]:
    """Which of test's stored edges (by their ``LEVEL_KEY`` tensor ``level``) the graphs of
    val and train keep: ``{"val": level <= 1, "train": level == 0}``, each ``None`` where the
    split's graph is the next split's (val's is test's when ``same_graph["val_test"]``,
    train's is val's when ``same_graph["train_val"]``; ``link.json`` records both)."""
    level = level.to(torch.int64)
    return {"val": None if same_graph["val_test"] else level <= 1,
            "train": None if same_graph["train_val"] else level == 0}
