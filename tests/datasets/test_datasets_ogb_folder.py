"""OGB node-property datasets from a local folder in OGB's raw CSV layout."""
import gzip

import numpy as np
import pytest
import torch

from pyg_sar.datasets import load_dataset, ogb_node_dataset

EDGES = [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3), (0, 3)]
FEATS = np.arange(12, dtype=np.float32).reshape(6, 2) / 4
LABELS = ["0", "1", "0", "nan", "2", "1"]
SPLIT = {"train": [0, 1, 2], "valid": [4], "test": [5]}


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        f.write("".join(f"{line}\n" for line in lines))


def _make_ogb(folder, split_types=("time",), edge_feat=False, edges=EDGES):
    raw = folder / "raw"
    _write(raw / "edge.csv.gz", [f"{s},{d}" for s, d in edges])
    _write(raw / "node-feat.csv.gz", [",".join(repr(float(v)) for v in row) for row in FEATS])
    _write(raw / "node-label.csv.gz", LABELS)
    _write(raw / "num-node-list.csv.gz", ["6"])
    _write(raw / "num-edge-list.csv.gz", [str(len(edges))])
    if edge_feat:
        _write(raw / "edge-feat.csv.gz", [f"{i}.5" for i in range(len(edges))])
    for kind in split_types:
        for name, ids in SPLIT.items():
            _write(folder / "split" / kind / f"{name}.csv.gz", [str(i) for i in ids])
    return folder


def test_ogb_round_trip(tmp_path):
    folder = _make_ogb(tmp_path / "ogbn_tiny")
    data = load_dataset(f"ogb:{folder}")
    assert data.edge_index.tolist() == [[s for s, _ in EDGES], [d for _, d in EDGES]]
    assert data.edge_index.dtype == torch.long
    assert data.x.dtype == torch.float32 and torch.equal(data.x, torch.from_numpy(FEATS))
    assert data.y.tolist() == [0, 1, 0, -1, 2, 1]  # -1: unlabelled ("nan")
    assert data.train_mask.tolist() == [True, True, True, False, False, False]
    assert data.val_mask.tolist() == [False, False, False, False, True, False]
    assert data.test_mask.tolist() == [False, False, False, False, False, True]
    assert "edge_attr" not in data


def test_ogb_inverse_edges_and_edge_features(tmp_path):
    folder = _make_ogb(tmp_path / "d", edge_feat=True)
    data = ogb_node_dataset(folder, add_inverse_edge=True)
    pairs = set(map(tuple, data.edge_index.t().tolist()))
    assert pairs == set(EDGES) | {(d, s) for s, d in EDGES}
    assert data.edge_index.size(1) == 2 * len(EDGES)
    # Each edge (and its reverse) carries the feature of the file line it came from.
    for (s, d), attr in zip(data.edge_index.t().tolist(), data.edge_attr[:, 0].tolist()):
        line = EDGES.index((s, d)) if (s, d) in EDGES else EDGES.index((d, s))
        assert attr == line + 0.5
    # A file that already holds both directions gets no duplicates; the first line wins.
    both = _make_ogb(tmp_path / "both", edge_feat=True, edges=[(0, 1), (1, 0), (2, 3)])
    data = ogb_node_dataset(both, add_inverse_edge=True)
    assert data.edge_index.tolist() == [[0, 1, 2, 3], [1, 0, 3, 2]]
    assert data.edge_attr[:, 0].tolist() == [0.5, 1.5, 2.5, 2.5]


def test_ogb_errors(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        ogb_node_dataset(tmp_path / "nowhere")
    two = _make_ogb(tmp_path / "two", split_types=("time", "random"))
    with pytest.raises(ValueError, match=r"exactly one split type .*\['random', 'time'\]"):
        ogb_node_dataset(two)
    assert ogb_node_dataset(two, split_type="random").train_mask.sum() == 3

    bad = _make_ogb(tmp_path / "bad")
    _write(bad / "split" / "time" / "test.csv.gz", ["6"])
    with pytest.raises(ValueError, match=r"test.csv.gz has node ids in \[6, 6\]"):
        ogb_node_dataset(bad)
    _write(bad / "split" / "time" / "test.csv.gz", ["3"])
    with pytest.raises(ValueError, match="lists nodes without a label"):
        ogb_node_dataset(bad)

    short = _make_ogb(tmp_path / "short")
    _write(short / "raw" / "num-edge-list.csv.gz", ["8"])
    with pytest.raises(ValueError, match=r"expected \(8, 2\)"):
        ogb_node_dataset(short)
    (short / "raw" / "node-feat.csv.gz").unlink()
    _write(short / "raw" / "num-edge-list.csv.gz", [str(len(EDGES))])
    with pytest.raises(ValueError, match="node-feat.csv.gz is missing"):
        ogb_node_dataset(short)
