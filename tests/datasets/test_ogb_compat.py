"""``pyg_sar.datasets.PygNodePropPredDataset`` and ``Evaluator``: OGB's classes read from the
local folder ``ogb`` unpacks (never downloading), and OGB's accuracy over every rank's rows."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch_geometric.transforms as T

from pyg_sar.datasets import Evaluator, PygNodePropPredDataset
from pyg_sar.testing import run_on_ranks
from tests.examples.ogb_data import write_products_like

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ogb")
    write_products_like(root / "ogbn_products", num_nodes=50)
    return root


def test_dataset_reads_ogb_layout_as_ogb_does(root):
    dataset = PygNodePropPredDataset("ogbn-products", root)
    data = dataset[0]
    assert len(dataset) == 1 and data.y.shape == (50, 1) and data.y.dtype == torch.long
    assert dataset.num_features == 8 and dataset.num_classes == int(data.y.max()) + 1
    assert not any(k.endswith("_mask") for k in data.keys())
    # ogbn-products lists each undirected edge once; OGB adds the reverses
    pairs = set(map(tuple, data.edge_index.t().tolist()))
    assert all((d, s) in pairs for s, d in pairs)
    split = dataset.get_idx_split()
    assert set(split) == {"train", "valid", "test"}
    ids = torch.cat(list(split.values()))
    assert torch.equal(ids.sort().values, torch.arange(50))  # a partition of the nodes


def test_dataset_applies_transform_and_keeps_its_graph(root):
    dataset = PygNodePropPredDataset("ogbn-products", root, transform=T.ToSparseTensor())
    first = dataset[0]
    assert "adj_t" in first and "edge_index" not in first
    assert "edge_index" in PygNodePropPredDataset("ogbn-products", root)[0]


def test_split_files_are_read_by_get_idx_split_only(tmp_path):
    """As OGB: the graph is read without its splits (they are not masks of it), and the split
    files are read when asked for."""
    write_products_like(tmp_path / "ogbn_products", num_nodes=20)
    split = tmp_path / "ogbn_products" / "split"
    split.rename(tmp_path / "elsewhere")
    dataset = PygNodePropPredDataset("ogbn-products", tmp_path)
    assert dataset[0].num_nodes == 20
    with pytest.raises(ValueError, match="split"):
        dataset.get_idx_split()
    (tmp_path / "elsewhere").rename(split)
    assert sum(v.numel() for v in dataset.get_idx_split().values()) == 20


def test_dataset_never_downloads_and_names_the_folder(tmp_path):
    with pytest.raises(ValueError, match=r"ogbn_arxiv does not exist.*never downloads"):
        PygNodePropPredDataset("ogbn-arxiv", tmp_path)
    with pytest.raises(ValueError, match="unknown or unsupported dataset 'ogbn-proteins'"):
        PygNodePropPredDataset("ogbn-proteins", tmp_path)


def test_evaluator_is_ogbs_accuracy_on_one_process():
    y_true = np.array([[0], [1], [2], [-1]])
    y_pred = np.array([[0], [2], [2], [1]])
    assert Evaluator("ogbn-arxiv").eval({"y_true": y_true, "y_pred": y_pred}) == {"acc": 2 / 3}
    with pytest.raises(ValueError, match=r"same shape \[rows, tasks\], got \[4\] and \[4, 1\]"):
        Evaluator("ogbn-arxiv").eval({"y_true": y_true[:, 0], "y_pred": y_pred})


@pytest.mark.parametrize("world_size", [2, 3])
def test_evaluator_counts_every_ranks_rows(world_size):
    accs = run_on_ranks(f"{HERE / 'ogb_compat_cases.py'}:evaluator_over_ranks", world_size,
                        timeout=300)
    assert accs == [pytest.approx(4 / 7)] * world_size  # the 7 rows' accuracy, not a rank's
