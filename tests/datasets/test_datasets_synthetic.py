"""Stochastic block model and R-MAT generators: determinism, structure, learnability."""
import pytest
import torch

from pyg_sar.datasets import load_dataset, rmat, sbm, sbm_dense


def _assert_simple_graph(edge_index, num_nodes):
    src, dst = edge_index
    assert edge_index.dtype == torch.long
    assert int(edge_index.min()) >= 0 and int(edge_index.max()) < num_nodes
    assert not bool((src == dst).any()), "self-loop"
    keys = dst * num_nodes + src
    assert keys.unique().numel() == keys.numel(), "duplicate edge"
    assert bool((keys[1:] > keys[:-1]).all()), "not sorted by (destination, source)"


def _assert_split(data, train=0.6, val=0.2):
    n = data.num_nodes
    masks = torch.stack([data.train_mask, data.val_mask, data.test_mask])
    assert masks.dtype == torch.bool
    assert torch.equal(masks.sum(0), torch.ones(n, dtype=torch.long))
    assert int(data.train_mask.sum()) == round(train * n)
    assert int(data.val_mask.sum()) == round(val * n)


def _nearest_class_mean_accuracy(data):
    num_classes = int(data.y.max()) + 1
    tr = data.train_mask
    means = torch.stack([data.x[tr & (data.y == c)].mean(0) for c in range(num_classes)])
    pred = torch.cdist(data.x[~tr], means).argmin(1)
    return float((pred == data.y[~tr]).float().mean())


def _edge_homophily(data):
    src, dst = data.edge_index
    return float((data.y[src] == data.y[dst]).float().mean())


@pytest.mark.parametrize("homophily", [0.1, 0.5, 0.9])
def test_sbm_structure(homophily):
    data = sbm(num_nodes=3000, num_classes=5, avg_degree=8.0, homophily=homophily,
               num_features=16, feature_noise=2.0, seed=3)
    assert data.x.shape == (3000, 16) and data.x.dtype == torch.float32
    assert data.y.dtype == torch.long and torch.bincount(data.y).tolist() == [600] * 5
    assert data.edge_index.size(1) == 24000  # exactly round(N * avg_degree)
    _assert_simple_graph(data.edge_index, 3000)
    _assert_split(data)
    # Per-block edge counts are exact, so homophily matches up to the rounding of one edge.
    assert abs(_edge_homophily(data) - homophily) < 1e-3
    # Features carry the class: nearest class mean far above chance (0.2).
    assert _nearest_class_mean_accuracy(data) > 0.6


def test_sbm_deterministic_by_seed():
    kwargs = dict(num_nodes=2000, num_classes=4, avg_degree=6.0, homophily=0.7)
    a, b, c = sbm(seed=5, **kwargs), sbm(seed=5, **kwargs), sbm(seed=6, **kwargs)
    for key in ("x", "y", "edge_index", "train_mask", "val_mask", "test_mask"):
        assert torch.equal(a[key], b[key]), key
    assert not torch.equal(a.edge_index, c.edge_index)
    assert not torch.equal(a.x, c.x)


def test_sbm_dense_preset():
    data = sbm_dense()
    assert data.num_nodes == 120_000 and data.edge_index.size(1) == 1_100_000
    _assert_simple_graph(data.edge_index, 120_000)
    assert abs(_edge_homophily(data) - 0.2) < 1e-3  # most edges cross communities


def test_sbm_sparse_via_load_dataset():
    data = load_dataset("sbm")
    assert data.num_nodes == 20_000 and data.edge_index.size(1) == 100_000
    assert abs(_edge_homophily(data) - 0.8) < 1e-3
    assert torch.equal(load_dataset("sbm-sparse").edge_index, data.edge_index)


def test_sbm_bad_parameters():
    with pytest.raises(ValueError, match="homophily must be in"):
        sbm(num_nodes=100, homophily=1.5)
    with pytest.raises(ValueError, match=r"block \(\d+, \d+\) needs"):
        sbm(num_nodes=20, num_classes=2, avg_degree=15.0, homophily=0.9)
    with pytest.raises(ValueError, match="train_fraction"):
        sbm(num_nodes=100, train_fraction=0.9, val_fraction=0.2)


def test_rmat_structure_and_heavy_tail():
    data = rmat(5000, 60_000, seed=1)
    num_edges = data.edge_index.size(1)
    assert 0.99 * 60_000 <= num_edges <= 60_000
    _assert_simple_graph(data.edge_index, 5000)  # 5000 is not a power of two: ids in range
    assert data.x.shape == (5000, 16) and data.x.dtype == torch.float32
    assert data.y.dtype == torch.long and int(data.y.max()) < 8
    assert torch.bincount(data.y, minlength=8).min() > 0  # every class used
    _assert_split(data)
    in_deg = torch.bincount(data.edge_index[1], minlength=5000).float()
    out_deg = torch.bincount(data.edge_index[0], minlength=5000).float()
    for deg in (in_deg, out_deg):
        assert float(deg.max()) > 20 * float(deg.mean())  # power law: hubs
        assert float(deg.median()) < float(deg.mean())   # and a long tail of small degrees


def test_rmat_labels_follow_neighbourhood():
    # Labels are argmax of a linear map of [x_i, mean of in-neighbours' x]: a least-squares
    # fit on those inputs separates the classes much better than one on x alone.
    data = rmat(4000, 40_000, num_features=8, num_classes=4, seed=2)
    src, dst = data.edge_index
    agg = torch.zeros_like(data.x).index_add_(0, dst, data.x[src])
    agg = agg / torch.bincount(dst, minlength=4000).clamp_min(1).unsqueeze(1)
    target = torch.nn.functional.one_hot(data.y, 4).float()

    def fit_accuracy(features):
        w = torch.linalg.lstsq(features, target).solution
        return float(((features @ w).argmax(1) == data.y).float().mean())

    assert fit_accuracy(torch.cat([data.x, agg], 1)) > fit_accuracy(data.x) + 0.1


def test_rmat_deterministic_by_seed():
    a, b, c = rmat(3000, 20_000, seed=4), rmat(3000, 20_000, seed=4), rmat(3000, 20_000, seed=5)
    for key in ("x", "y", "edge_index", "train_mask", "val_mask", "test_mask"):
        assert torch.equal(a[key], b[key]), key
    assert not torch.equal(a.edge_index, c.edge_index)


def test_rmat_bad_parameters():
    with pytest.raises(ValueError, match="a, b, c must be"):
        rmat(100, 1000, a=0.8, b=0.3)
    with pytest.raises(ValueError, match="num_edges must be in"):
        rmat(10, 1000)
    with pytest.raises(ValueError, match="num_nodes must be"):
        rmat(1, 0)
