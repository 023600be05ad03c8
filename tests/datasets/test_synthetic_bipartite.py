"""pyg_sar.datasets.synthetic_bipartite.user_item: the layout PyG's recommendation examples
use, deterministic by seed, held-out pairs disjoint from training, bad input refused."""
import pytest
import torch

from pyg_sar.datasets.synthetic_bipartite import user_item


def test_layout_and_counts():
    d = user_item(50, 30, interactions_per_user=10, test_fraction=0.2, seed=3)
    u, i = d.num_users, d.num_items
    assert (u, i, d.num_nodes) == (50, 30, 80)
    src, dst = d.edge_index
    half = src.numel() // 2
    # user -> item first, then the reverse of the same pairs
    assert bool((src[:half] < u).all() and (dst[:half] >= u).all())
    assert torch.equal(d.edge_index[:, half:], d.edge_index[:, :half].flip(0))
    assert half == 50 * 8 and d.edge_label_index.shape == (2, 50 * 2)
    assert bool((d.edge_label_index[1] >= u).all() and (d.edge_label_index[1] < u + i).all())
    train = set(map(tuple, d.edge_index[:, :half].t().tolist()))
    test = set(map(tuple, d.edge_label_index.t().tolist()))
    assert len(train) == half and len(test) == 100 and not train & test
    assert torch.equal(torch.bincount(d.edge_index[0, :half], minlength=u), torch.full((u,), 8))


def test_deterministic_by_seed():
    a, b, c = user_item(40, 20, seed=1), user_item(40, 20, seed=1), user_item(40, 20, seed=2)
    assert torch.equal(a.edge_index, b.edge_index)
    assert torch.equal(a.edge_label_index, b.edge_label_index)
    assert not torch.equal(a.edge_index, c.edge_index)


def test_held_out_items_follow_the_training_signal():
    """Items popular in training are over-represented among held-out pairs (the task is
    learnable): the top fifth of items by training degree hold far more than a fifth."""
    d = user_item(400, 100, interactions_per_user=10, seed=0)
    half = d.edge_index.shape[1] // 2
    deg = torch.bincount(d.edge_index[1, :half] - 400, minlength=100)
    top = deg.topk(20).indices
    share = torch.isin(d.edge_label_index[1] - 400, top).double().mean()
    assert share > 0.3, share


@pytest.mark.parametrize("kwargs, word", [
    (dict(num_users=0), "num_users"),
    (dict(num_items=5, interactions_per_user=6), "interactions_per_user"),
    (dict(test_fraction=1.0), "test_fraction"),
    (dict(temperature=0.0), "temperature"),
])
def test_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        user_item(**kwargs)
