"""Cora, CiteSeer and WordNet from the files shipped in pyg_sar/datasets/data."""
import shutil
import threading

import pytest
import torch

from pyg_sar.datasets import (
    citeseer,
    cora,
    default_cache_dir,
    load_dataset,
    random_split_masks,
    wordnet,
)
from pyg_sar.datasets import planetoid as planetoid_module


def _check_standard(data, num_nodes, num_edges, num_features, num_classes):
    assert data.num_nodes == num_nodes
    assert data.edge_index.shape == (2, num_edges)
    assert data.edge_index.dtype == torch.long
    assert data.x.shape == (num_nodes, num_features)
    assert data.x.dtype == torch.float32
    assert data.y.dtype == torch.long
    assert int(data.y.max()) + 1 == num_classes
    for name in ("train_mask", "val_mask", "test_mask"):
        assert data[name].dtype == torch.bool
        assert data[name].shape == (num_nodes,)


def test_cora_sizes_and_split(tmp_path):
    data = cora(root=tmp_path)
    _check_standard(data, 2708, 10556, 1433, 7)
    assert [int(data[m].sum()) for m in ("train_mask", "val_mask", "test_mask")] == [140, 500,
                                                                                      1000]
    # Second call reuses the cache and gives the same tensors.
    again = load_dataset("Cora", root=tmp_path)
    assert torch.equal(again.edge_index, data.edge_index) and torch.equal(again.x, data.x)
    folders = [p.name for p in (tmp_path / "planetoid").iterdir()]
    assert len(folders) == 1 and folders[0].startswith("Cora-")  # no temporary left behind
    assert (tmp_path / "planetoid" / folders[0] / "Cora" / "processed").is_dir()


def test_citeseer_sizes_and_split(tmp_path):
    data = citeseer(root=tmp_path)
    _check_standard(data, 3327, 9104, 3703, 6)
    assert [int(data[m].sum()) for m in ("train_mask", "val_mask", "test_mask")] == [120, 500,
                                                                                      1000]


def test_cache_default_follows_env(tmp_path, monkeypatch):
    monkeypatch.setenv("PYG_SAR_CACHE", str(tmp_path / "cache"))
    assert default_cache_dir() == tmp_path / "cache"
    assert cora().num_nodes == 2708
    assert any(p.name.startswith("Cora-") for p in (tmp_path / "cache" / "planetoid").iterdir())


def test_cache_concurrent_first_use(tmp_path):
    # Two workers build the cache at the same time: both must get the full dataset and exactly
    # one folder must be installed (the loser discards its temporary copy).
    barrier = threading.Barrier(2)
    results, errors = [], []

    def work():
        try:
            barrier.wait()
            results.append(cora(root=tmp_path))
        except Exception as e:  # noqa: BLE001 - re-raised in the main thread below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert [d.edge_index.size(1) for d in results] == [10556, 10556]
    names = [p.name for p in (tmp_path / "planetoid").iterdir()]
    assert len(names) == 1 and names[0].startswith("Cora-")  # the loser's temporary is gone


def test_tampered_raw_file_is_refused(tmp_path, monkeypatch):
    shipped = tmp_path / "shipped"
    shutil.copytree(planetoid_module.DATA_DIR, shipped)
    target = shipped / "planetoid" / "Cora" / "raw" / "ind.cora.y"
    target.chmod(0o644)
    target.write_bytes(target.read_bytes() + b"\0")
    monkeypatch.setattr(planetoid_module, "DATA_DIR", shipped)
    with pytest.raises(RuntimeError, match="ind.cora.y has SHA-256"):
        cora(root=tmp_path / "cache")
    # Nothing half-built is left to be picked up later.
    assert list((tmp_path / "cache" / "planetoid").iterdir()) == []


def test_wordnet_sizes_and_seeded_split():
    data = wordnet()  # one load: decompressing the 941 MB feature matrix takes seconds
    _check_standard(data, 117659, 367578, 2000, 45)
    head = data.x[:5000]
    assert bool(((head == 0) | (head == 1)).all()) and float(head.sum()) > 0  # bag of words
    src, dst = data.edge_index
    assert not bool((src == dst).any())
    assert int(data.edge_index.max()) == 117658 and int(data.edge_index.min()) == 0
    masks = torch.stack([data.train_mask, data.val_mask, data.test_mask])
    assert torch.equal(masks.sum(0), torch.ones(117659, dtype=torch.long))  # disjoint, covering
    assert [int(m.sum()) for m in masks] == [70595, 23532, 23532]
    # The split is the shared seeded split: same seed -> same masks, other seed -> others.
    assert torch.equal(random_split_masks(117659, 0.6, 0.2, seed=0)[0], data.train_mask)
    assert not torch.equal(random_split_masks(117659, 0.6, 0.2, seed=1)[0], data.train_mask)
