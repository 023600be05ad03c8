"""Global losses and metrics (pyg_sar.nn.functional): one process against torch, and 3 ranks
against single-process PyG on the whole graph (values, synchronised gradients, accuracy)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import pyg_sar.nn.functional as SF

HERE = Path(__file__).resolve().parent
LOSSES = ("cross_entropy", "cross_entropy_premasked", "cross_entropy_index_mask",
          "cross_entropy_weight_ignore_smoothing", "cross_entropy_sum",
          "cross_entropy_probabilities", "nll_loss", "nll_loss_weight", "binary_cross_entropy",
          "binary_cross_entropy_with_logits", "mse_loss", "l1_loss", "l1_loss_sum",
          "kl_div_batchmean", "kl_div_mean", "kl_div_sum_log_target", "global_mean_smooth_l1",
          "global_loss_custom")


@pytest.fixture(scope="module")
def ranks(api_p3_launch):
    """The 3 ranks' results of ``training_cases.losses`` (one launch shared with the other
    api files: tests/api/conftest.py)."""
    return api_p3_launch["losses"]


@pytest.mark.parametrize("name", LOSSES)
def test_global_loss_equals_single_process(ranks, name):
    for rank, res in enumerate(ranks):
        case = res[name]
        assert case["value"] <= 1e-12, (rank, case)
        assert case["same_on_ranks"], (rank, case)
        assert case["grad"] <= 1e-10, (rank, case)


def test_accuracy_logits_predictions_and_masks(ranks):
    for res in ranks:
        assert max(res["accuracy"].values()) <= 1e-15, res["accuracy"]
        assert res["global_sum"] == 0


def test_empty_mask_raises_on_every_rank(ranks):
    for res in ranks:
        assert res["empty_mask"]["type"] == "ValueError"
        assert "no element is selected on any rank" in res["empty_mask"]["message"]


def test_reduction_none_is_local(ranks):
    assert all(res["none_is_local"] == 0.0 for res in ranks)


# ---- one process: the losses are torch's -----------------------------------------------
def _data(n=12, c=4):
    g = torch.Generator().manual_seed(0)
    out = torch.randn(n, c, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, c, (n,), generator=g)
    mask = torch.rand(n, generator=g) < 0.5
    target = torch.rand(n, c, generator=g, dtype=torch.float64)
    return out, y, mask, target


@pytest.mark.filterwarnings("ignore:reduction. .mean. divides the total loss")
@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss", "mse_loss", "l1_loss",
                                  "binary_cross_entropy", "binary_cross_entropy_with_logits",
                                  "kl_div"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_one_process_equals_torch(name, reduction):
    out, y, mask, target = _data()
    inp = {"nll_loss": out.log_softmax(-1), "binary_cross_entropy": out.sigmoid(),
           "kl_div": out.log_softmax(-1)}.get(name, out)
    tgt = y if name in ("cross_entropy", "nll_loss") else target
    want = getattr(F, name)(inp[mask], tgt[mask], reduction=reduction)
    got = getattr(SF, name)(inp, tgt, mask, reduction=reduction)
    assert torch.allclose(got, want, rtol=1e-14, atol=0)
    g_want = torch.autograd.grad(want.sum(), out, retain_graph=True)[0]
    out.grad = None
    got.sum().backward()
    assert torch.allclose(out.grad, g_want, rtol=1e-13, atol=1e-16)


def test_one_process_global_mean_and_accuracy():
    out, y, mask, target = _data()
    got = SF.global_mean(F.smooth_l1_loss(out, target, reduction="none"), mask)
    assert torch.allclose(got, F.smooth_l1_loss(out[mask], target[mask]), rtol=1e-14)
    want = float((out.argmax(-1) == y)[mask].double().mean())
    assert SF.accuracy(out, y, mask) == want
    assert SF.accuracy(out.argmax(-1)[mask], y[mask]) == want
    assert SF.kl_div(out.log_softmax(-1), target.softmax(-1), reduction="batchmean").item() == \
        pytest.approx(F.kl_div(out.log_softmax(-1), target.softmax(-1),
                               reduction="batchmean").item(), rel=1e-14)


def test_bad_arguments_name_the_value():
    out, y, mask, _ = _data()
    with pytest.raises(ValueError, match="reduction must be one of"):
        SF.nll_loss(out, y, mask, reduction="avg")
    with pytest.raises(ValueError, match="bool mask with 12 rows"):
        SF.cross_entropy(out, y, mask[:5])
    with pytest.raises(ValueError, match="pass class weights as weight="):
        SF.cross_entropy(out, y, torch.ones(4, dtype=torch.float64))
    with pytest.raises(ValueError, match="no element is selected"):
        SF.mse_loss(out, out.detach(), torch.zeros(12, dtype=torch.bool))
    with pytest.raises(ValueError, match="expected a scalar share"):
        SF.global_loss(out)
    with pytest.raises(ValueError, match="logits"):
        SF.accuracy(out[:, :1].squeeze(1)[None], y)
