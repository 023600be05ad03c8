"""svd_features / load_dataset(svd_dim=...): against a dense float64 SVD oracle."""
import pytest
import torch
from torch_geometric.data import Data, HeteroData

from pyg_sar.datasets import load_dataset, reduced, sbm_sparse
from pyg_sar.datasets.reduced import svd_components, svd_features


def _sparse_graph(n=300, f=60, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.rand(n, f, generator=gen) < 0.08).float()  # a binary bag of words
    edge_index = torch.randint(0, n, (2, 4 * n), generator=gen)
    y = torch.randint(0, 3, (n,), generator=gen)
    return Data(x=x, y=y, edge_index=edge_index, train_mask=torch.rand(n, generator=gen) < 0.5)


def _oracle(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Dense float64 SVD: U S, the same sign convention, standardised columns."""
    u, s, _ = torch.linalg.svd(x.double(), full_matrices=False)
    comp = u[:, :dim] * s[:dim]
    peak = comp.abs().argmax(0)
    comp = comp * torch.sign(comp[peak, torch.arange(dim)])
    return (comp - comp.mean(0)) / comp.std(0, unbiased=False)


def test_matches_dense_svd():
    data = _sparse_graph()
    comp = svd_components(data.x, 12)
    u, s, _ = torch.linalg.svd(data.x.double(), full_matrices=False)
    assert torch.allclose(comp.norm(dim=0), s[:12], rtol=1e-10, atol=0)
    out = svd_features(data, 12)
    expect = _oracle(data.x, 12)
    err = (out.x.double() - expect).abs().max() / expect.abs().max()
    assert err <= 1e-6  # float32 output of a float64 computation
    assert out.x.dtype == torch.float32 and out.x.shape == (300, 12)


def test_standardised_shared_fields_and_input_untouched():
    data = _sparse_graph()
    x_before = data.x.clone()
    out = svd_features(data, 8)
    assert torch.equal(data.x, x_before) and data.x.shape == (300, 60)
    assert out.x.double().mean(0).abs().max() < 1e-6
    assert torch.allclose(out.x.double().std(0, unbiased=False), torch.ones(8, dtype=torch.float64),
                          atol=1e-6)
    assert out.edge_index is data.edge_index and out.y is data.y
    assert torch.equal(out.train_mask, data.train_mask)


def test_deterministic_and_sign_convention():
    data = _sparse_graph(seed=3)
    a, b = svd_features(data, 10), svd_features(data, 10, seed=5)
    assert torch.equal(a.x, b.x)  # exact route: the seed does not matter
    comp = svd_components(data.x, 10)
    peak = comp.abs().argmax(0)
    assert bool((comp[peak, torch.arange(10)] > 0).all())


def test_randomised_route_for_wide_features(monkeypatch):
    # A rank-6 matrix: the randomised SVD recovers its 6 components exactly.
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(200, 6, generator=gen, dtype=torch.float64) @ \
        torch.randn(6, 40, generator=gen, dtype=torch.float64)
    data = Data(x=x, edge_index=torch.zeros(2, 0, dtype=torch.long))
    monkeypatch.setattr(reduced, "EXACT_MAX_FEATURES", 0)
    comp = svd_components(x, 6, seed=2)
    s = torch.linalg.svdvals(x)[:6]
    assert torch.allclose(comp.norm(dim=0), s, rtol=1e-10, atol=0)
    expect = _oracle(x, 6)
    assert (svd_features(data, 6, seed=2).x.double() - expect).abs().max() <= 1e-5


@pytest.mark.parametrize("dim", [0, -1, 60, 2.0, True])
def test_bad_dim_refused(dim):
    with pytest.raises(ValueError, match="dim"):
        svd_features(_sparse_graph(), dim)


def test_bad_data_refused():
    with pytest.raises(ValueError, match="Data"):
        svd_features(HeteroData(), 4)
    with pytest.raises(ValueError, match="2-D"):
        svd_features(Data(x=torch.ones(5)), 2)


def test_load_dataset_svd_dim():
    kw = dict(num_nodes=400, num_classes=4, num_features=24, seed=0)
    plain = load_dataset("sbm", **kw)
    out = load_dataset("sbm", svd_dim=8, **kw)
    assert torch.equal(out.x, svd_features(sbm_sparse(**kw), 8).x)
    assert torch.equal(out.edge_index, plain.edge_index) and torch.equal(out.y, plain.y)
    assert torch.equal(load_dataset("sbm", svd_dim=None, **kw).x, plain.x)
    with pytest.raises(ValueError, match="heterogeneous"):
        load_dataset("mag-like", svd_dim=8)
    with pytest.raises(ValueError, match="dim"):
        load_dataset("sbm", svd_dim=24, **kw)
