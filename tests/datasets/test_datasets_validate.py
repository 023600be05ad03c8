"""from_pyg: validation of user graphs, and load_dataset's name handling."""
import pytest
import torch
from torch_geometric.data import Data

from pyg_sar.datasets import KNOWN_NAMES, from_pyg, load_dataset


def _graph(**overrides):
    data = Data(x=torch.randn(5, 3, dtype=torch.float64),
                edge_index=torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]], dtype=torch.int32),
                y=torch.tensor([0, 1, 0, 1, 2], dtype=torch.int32))
    for key, value in overrides.items():
        data[key] = value
    return data


def test_from_pyg_normalises_and_fills_split():
    raw = _graph(edge_weight=torch.rand(4))
    data = from_pyg(raw, split_seed=3)
    assert data.edge_index.dtype == torch.long and data.x.dtype == torch.float32
    assert data.y.dtype == torch.long and data.y.tolist() == [0, 1, 0, 1, 2]
    assert torch.equal(data.edge_index, raw.edge_index.long())
    assert torch.allclose(data.x.double(), raw.x, atol=1e-6)
    assert torch.equal(data.edge_weight, raw.edge_weight)
    masks = torch.stack([data.train_mask, data.val_mask, data.test_mask])
    assert torch.equal(masks.sum(0), torch.ones(5, dtype=torch.long))
    assert [int(m.sum()) for m in masks] == [3, 1, 1]
    again = from_pyg(raw, split_seed=3)
    assert torch.equal(again.train_mask, data.train_mask)
    assert raw.edge_index.dtype == torch.int32 and "train_mask" not in raw  # input untouched


def test_from_pyg_keeps_given_masks_and_column_labels():
    mask = torch.tensor([True, False, True, False, False])
    data = from_pyg(_graph(y=torch.tensor([[0], [1], [0], [1], [2]]), train_mask=mask,
                           val_mask=~mask, test_mask=torch.zeros(5, dtype=torch.bool)))
    assert torch.equal(data.train_mask, mask) and data.y.shape == (5,)


@pytest.mark.parametrize("overrides, message", [
    (dict(edge_index=torch.tensor([[0, 5], [1, 2]])), r"node ids in \[0, 5\] but there are 5"),
    (dict(edge_index=torch.tensor([[-1, 0], [1, 2]])), r"node ids in \[-1, 2\]"),
    (dict(edge_index=torch.tensor([[0.0, 1.0], [1.0, 2.0]])), "must be an integer tensor"),
    (dict(edge_index=torch.tensor([0, 1, 2])), r"shape \[2, E\] \(got \(3,\)\)"),
    (dict(x=torch.randn(4, 3)), r"node ids in \[0, 4\] but there are 4"),
    (dict(x=torch.randn(5)), "2-D real tensor"),
    (dict(y=torch.rand(5)), "integer class labels"),
    (dict(y=torch.tensor([0, 1, 2])), r"y must have shape \[5\]"),
    (dict(y=torch.tensor([0, 1, -1, 0, 0])), "negative labels"),
    (dict(train_mask=torch.ones(5, dtype=torch.bool)), r"not \['val_mask', 'test_mask'\]"),
    (dict(train_mask=torch.ones(5), val_mask=torch.ones(5, dtype=torch.bool),
          test_mask=torch.ones(5, dtype=torch.bool)), "train_mask must be a bool tensor"),
    (dict(train_mask=torch.ones(5, 2, dtype=torch.bool),
          val_mask=torch.ones(5, dtype=torch.bool),
          test_mask=torch.ones(5, dtype=torch.bool)), "pick one column"),
    (dict(edge_attr=torch.randn(3, 2)), r"edge_attr must have one row per edge \(4\)"),
])
def test_from_pyg_rejects_bad_data(overrides, message):
    with pytest.raises(ValueError, match=message):
        from_pyg(_graph(**overrides))


def test_from_pyg_rejects_missing_parts():
    with pytest.raises(ValueError, match="data.x is missing"):
        from_pyg(Data(edge_index=torch.tensor([[0], [1]]), y=torch.tensor([0, 1])))
    with pytest.raises(ValueError, match="data.y is missing"):
        from_pyg(Data(x=torch.randn(2, 1), edge_index=torch.tensor([[0], [1]])))
    with pytest.raises(ValueError, match="expected a torch_geometric.data.Data"):
        from_pyg({"x": torch.randn(2, 1)})


def test_load_dataset_unknown_name_lists_known():
    with pytest.raises(ValueError, match="unknown dataset 'pubmed'") as info:
        load_dataset("pubmed")
    for name in ("cora", "citeseer", "wordnet", "sbm-dense", "sbm-sparse", "rmat", "ogb:"):
        assert name in str(info.value)
    assert "sbm" in KNOWN_NAMES
    with pytest.raises(ValueError, match="needs a folder"):
        load_dataset("ogb:")


def test_load_dataset_generators_have_standard_dtypes():
    for name, kwargs in (("sbm-sparse", dict(num_nodes=500)),
                         ("sbm-dense", dict(num_nodes=600, num_edges=3000)),
                         ("rmat", dict(num_nodes=512, num_edges=2000))):
        data = load_dataset(name, **kwargs)
        assert data.x.dtype == torch.float32 and data.y.dtype == torch.long, name
        assert data.edge_index.dtype == torch.long, name
        for mask in ("train_mask", "val_mask", "test_mask"):
            assert data[mask].dtype == torch.bool and data[mask].numel() == data.num_nodes
