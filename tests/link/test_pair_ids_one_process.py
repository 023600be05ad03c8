"""Pairs that index like PyG's (pyg_sar.link.pair_ids), in one process (first tier; the
multi-rank cases are test_pair_ids.py): a link split hands out PairIds, fetched rows compute
torch's losses as torch does, and PyG's own negative_sampling given a DistGraph names
pyg_sar's."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F


def test_one_process_losses_are_torchs():
    from pyg_sar.link.pair_ids import PairIds, PairRows, as_pair_ids
    z = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    pairs = as_pair_ids(torch.tensor([[0, 5, 2], [1, 1, 4]]), None)
    rows = z.detach()[pairs[0]]  # no partition: plain indexing through gather
    assert isinstance(rows, PairRows) and torch.equal(rows.as_subclass(torch.Tensor),
                                                      z.detach()[[0, 5, 2]])
    score = (z[pairs[0]] * z[pairs[1]]).sum(-1)
    y = torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)
    plain = (z[[0, 5, 2]] * z[[1, 1, 4]]).sum(-1)
    assert torch.allclose(F.binary_cross_entropy_with_logits(score, y),
                          F.binary_cross_entropy_with_logits(plain, y), rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="reduction"):
        F.binary_cross_entropy_with_logits(score, y, reduction="avg")
    assert "PairIds(" in repr(pairs)
    src, dst = pairs  # PyG's decoders unpack the two rows
    assert isinstance(src, PairIds) and isinstance(dst, PairIds) and isinstance(pairs.T, PairIds)


def test_one_process_link_split_hands_out_pairs_and_names_pygs_sampler(tmp_path, monkeypatch):
    """``pyg_sar.distribute`` of a ``RandomLinkSplit`` triple gives PairIds; PyG's own
    ``negative_sampling`` on the rank's DistGraph raises, naming pyg_sar's."""
    import tempfile

    import torch_geometric.transforms as T
    from torch_geometric.data import Data
    from torch_geometric.utils import negative_sampling as pyg_negative_sampling

    import pyg_sar
    from pyg_sar.link import negative_sampling
    from pyg_sar.link.pair_ids import PairIds
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    tempfile.tempdir = None
    try:
        gen = torch.Generator().manual_seed(0)
        ei = torch.randint(0, 30, (2, 120), generator=gen)
        data = Data(x=torch.randn(30, 4, generator=gen), edge_index=ei, num_nodes=30)
        torch.manual_seed(0)
        split = T.RandomLinkSplit(num_val=0.1, num_test=0.1, is_undirected=False,
                                  add_negative_train_samples=False)(data)
        train, val, test = pyg_sar.distribute(split)
        for part in (train, val, test):
            assert isinstance(part.edge_label_index, PairIds)
        z = torch.randn(30, 3, dtype=torch.float64)[train.node_ids]
        ends = z[train.edge_label_index]  # one process: the rows of those new ids
        assert torch.equal(ends.as_subclass(torch.Tensor),
                           z[train.edge_label_index.as_subclass(torch.Tensor)])
        neg = negative_sampling(edge_index=train.edge_index, num_nodes=train.num_nodes,
                                num_neg_samples=7, method="sparse")
        assert isinstance(neg, PairIds) and tuple(neg.shape) == (2, 7)
        with pytest.raises(TypeError, match="import negative_sampling from pyg_sar.link"):
            pyg_negative_sampling(edge_index=train.edge_index, num_nodes=train.num_nodes,
                                  num_neg_samples=7, method="sparse")
        with pytest.raises(ValueError, match=r"num_neg_samples must be .* \(rank 0\)"):
            negative_sampling(edge_index=train.edge_index, num_neg_samples=-1)
        with pytest.raises(ValueError, match="force_undirected"):
            negative_sampling(edge_index=train.edge_index, num_neg_samples=7,
                              force_undirected=True)
    finally:
        tempfile.tempdir = None
