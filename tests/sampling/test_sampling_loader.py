"""The loaders yield NeighborLoader's layout, deterministically, and feed an unchanged PyG loop."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from pyg_sar.ops.sampling import native_sampling_available
from pyg_sar.sampling import BulkLadiesLoader, BulkNeighborLoader

from .helpers import check_minibatch_layout, random_graph

BACKENDS = ["reference"] + (["native"] if native_sampling_available() else [])


@pytest.fixture(scope="module")
def data():
    data = random_graph(400, 3000, seed=11)
    data.train_mask = torch.rand(400, generator=torch.Generator().manual_seed(0)) < 0.5
    data.edge_weight = torch.rand(data.edge_index.size(1))
    return data


def _loader(kind, data, **kw):
    if kind == "sage":
        return BulkNeighborLoader(data, num_neighbors=kw.pop("sizes", [4, 3, -1]), **kw)
    return BulkLadiesLoader(data, layer_sizes=kw.pop("sizes", [30, 20, 10]), **kw)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["sage", "ladies"])
def test_layout_matches_neighbor_loader(data, kind, backend):
    sizes = [4, 3, -1] if kind == "sage" else [30, 20, 10]
    loader = _loader(kind, data, sizes=sizes, batch_size=37, bulk=3, seed=4,
                     input_nodes=data.train_mask, backend=backend)
    seed_list = data.train_mask.nonzero().view(-1)
    batches = list(loader)
    assert len(batches) == len(loader) == -(-int(data.train_mask.sum()) // 37)
    covered = torch.cat([b.n_id[:b.batch_size] for b in batches])
    assert torch.equal(covered.sort().values, seed_list)  # every seed once per epoch
    for batch in batches:
        check_minibatch_layout(batch, data, sizes, kind, seed_list)
        assert torch.equal(batch.x, data.x[batch.n_id]) and torch.equal(batch.y, data.y[batch.n_id])
        assert torch.equal(batch.edge_weight, data.edge_weight[batch.e_id])
        assert torch.equal(batch.train_mask, data.train_mask[batch.n_id])


@pytest.mark.parametrize("kind", ["sage", "ladies"])
def test_same_seed_same_minibatches_for_any_bulk(data, kind):
    runs = {}
    for bulk in (1, 4, 64):
        loader = _loader(kind, data, batch_size=50, bulk=bulk, seed=7, backend=BACKENDS[-1])
        runs[bulk] = [list(loader), list(loader)]  # epochs 0 and 1
    for bulk in (4, 64):
        for epoch in range(2):
            for a, b in zip(runs[1][epoch], runs[bulk][epoch], strict=True):
                for key in ("n_id", "edge_index", "e_id", "x"):
                    assert torch.equal(a[key], b[key]), (bulk, epoch, key)
                assert a.num_sampled_nodes == b.num_sampled_nodes
    first, second = runs[1]
    assert not torch.equal(first[0].n_id[:first[0].batch_size],
                           second[0].n_id[:second[0].batch_size]), "epochs must reshuffle"
    other = list(_loader(kind, data, batch_size=50, bulk=4, seed=8, backend=BACKENDS[-1]))
    assert any(not torch.equal(a.n_id, b.n_id) for a, b in zip(runs[1][0], other))


def test_set_epoch_replays_an_epoch(data):
    loader = BulkNeighborLoader(data, [5, 5], batch_size=64, bulk=2, seed=1)
    epoch0 = list(loader)
    list(loader)
    loader.set_epoch(0)
    again = list(loader)
    assert all(torch.equal(a.edge_index, b.edge_index) for a, b in zip(epoch0, again))


def test_trim_to_layer_and_an_unchanged_pyg_training_loop():
    """A GraphSAGE model learns Cora from the loader's minibatches, trimmed layer by layer."""
    from torch_geometric.nn import GraphSAGE

    from pyg_sar.datasets import load_dataset
    data = load_dataset("cora")
    torch.manual_seed(0)
    model = GraphSAGE(data.num_features, 32, num_layers=2, out_channels=7)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loader = BulkNeighborLoader(data, num_neighbors=[10, 5], batch_size=32, bulk=4,
                                input_nodes=data.train_mask, seed=0, backend=BACKENDS[-1])
    for _ in range(15):
        for batch in loader:
            opt.zero_grad()
            out = model(batch.x, batch.edge_index)[:batch.batch_size]
            loss = F.cross_entropy(out, batch.y[:batch.batch_size])
            loss.backward()
            opt.step()
    # trimmed forward == untrimmed forward on the seed rows
    model.eval()
    batch = next(iter(loader))
    with torch.no_grad():
        full = model(batch.x, batch.edge_index)[:batch.batch_size]
        trimmed = model(batch.x, batch.edge_index,
                        num_sampled_nodes_per_hop=batch.num_sampled_nodes,
                        num_sampled_edges_per_hop=batch.num_sampled_edges)[:batch.batch_size]
        torch.testing.assert_close(trimmed, full)
        pred = model(data.x, data.edge_index).argmax(1)
    acc = float((pred[data.test_mask] == data.y[data.test_mask]).float().mean())
    assert acc > 0.70, acc  # full-neighbourhood inference of a sampled-trained 2-layer SAGE


def test_progress_bar_counts_the_epoch(data, capsys):
    loader = BulkNeighborLoader(data, [3], batch_size=100, bulk=2, progress=True)
    assert sum(1 for _ in loader) == 4
    assert "4/4" in capsys.readouterr().err


def test_bad_arguments_are_refused(data):
    with pytest.raises(ValueError, match="bulk must be >= 1"):
        BulkNeighborLoader(data, [3], bulk=0)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        BulkNeighborLoader(data, [3], batch_size=0)
    with pytest.raises(ValueError, match=r"input_nodes must lie in \[0, 400\)"):
        BulkNeighborLoader(data, [3], input_nodes=torch.tensor([5, 400]))
    with pytest.raises(ValueError, match="layer_sizes must be >= 0"):
        BulkLadiesLoader(data, [-1])
    with pytest.raises(TypeError, match="expected a torch_geometric.data.Data"):
        BulkNeighborLoader(object(), [3])


def test_partition_without_folder_is_refused_with_the_fix():
    """A part from pyg_sar.distribute lives in memory: the loader, which reads the node map
    from the partition folder, must say so instead of failing on a missing path."""
    import pyg_sar
    from pyg_sar.datasets import load_dataset
    from pyg_sar.sampling import BulkNeighborLoader

    part = pyg_sar.distribute(load_dataset("cora"), method="contiguous")
    assert part.path is None
    with pytest.raises(ValueError, match="pyg_sar.partition_graph"):
        BulkNeighborLoader(part, num_neighbors=[5], batch_size=8)
