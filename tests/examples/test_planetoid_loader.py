"""``pyg_sar.datasets.Planetoid``: the one line the ported PyG examples change to read the
shipped Cora/CiteSeer files instead of downloading them."""
import pytest
import torch
import torch_geometric.transforms as T
from torch_geometric.datasets import Planetoid as PyGPlanetoid

from pyg_sar.datasets import Planetoid, cora


def test_planetoid_is_pygs_dataset_of_the_shipped_files(tmp_path):
    dataset = Planetoid(str(tmp_path), "cora")  # any case, as PyG accepts
    assert isinstance(dataset, PyGPlanetoid)
    assert dataset.name == "Cora" and len(dataset) == 1
    assert (dataset.num_features, dataset.num_classes) == (1433, 7)
    data, ref = dataset[0], cora(tmp_path / "cache")
    for key in ("x", "y", "edge_index", "train_mask", "val_mask", "test_mask"):
        assert torch.equal(data[key], ref[key]), key
    assert [int(data[k].sum()) for k in ("train_mask", "val_mask", "test_mask")] == [
        140, 500, 1000]
    # The processed folder lives under the root given, and a second call reuses it.
    assert str(dataset.root).startswith(str(tmp_path))
    assert Planetoid(str(tmp_path), "Cora").root == dataset.root


def test_planetoid_passes_pygs_arguments(tmp_path):
    dataset = Planetoid(str(tmp_path), "CiteSeer", split="full",
                        transform=T.NormalizeFeatures())
    data = dataset[0]
    assert data.num_nodes == 3327
    # split='full': every node outside validation and test trains.
    assert int(data.train_mask.sum()) == 3327 - 500 - 1000
    row_sums = data.x.sum(dim=-1)
    nonzero = row_sums > 0
    assert torch.allclose(row_sums[nonzero], torch.ones(int(nonzero.sum())))


def test_planetoid_refuses_what_is_not_shipped(tmp_path):
    with pytest.raises(ValueError, match="PubMed.*torch_geometric.datasets.Planetoid"):
        Planetoid(str(tmp_path), "PubMed")
