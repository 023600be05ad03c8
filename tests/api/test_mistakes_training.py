"""The common training mistakes fail loudly on 3 ranks: a per-rank loss, parameters that
drift apart, gradients left unsynchronised; a forgotten broadcast is harmless."""
from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def ranks(api_p3_launch):
    """The 3 ranks' results of ``training_cases.mistakes`` (one launch shared with the other
    api files: tests/api/conftest.py)."""
    return api_p3_launch["mistakes"]


@pytest.mark.parametrize("case", ["local_loss", "local_loss_mse"])
def test_per_rank_loss_raises_naming_the_fix(ranks, case):
    for res in ranks:
        err = res[case]
        assert err["type"] == "RuntimeError", err
        assert "not reduced over ranks" in err["message"]
        for fix in ("pyg_sar.nn.functional", "SF.global_mean", "SF.global_loss",
                    "check_loss=False"):
            assert fix in err["message"]
        assert res["local_loss_grads_none"]
        assert res["after_error_grad"] <= 1e-12  # the next, correct step is exact


def test_refused_pass_leaves_no_state_behind(ranks):
    for res in ranks:
        case = res["after_aborted_pass"]
        assert case["error"] == "RuntimeError" and case["extra_restored"], case
        assert case["extra"] == [2.0, 2.0] and case["grad"] <= 1e-12, case


def test_opt_outs_for_own_reductions(ranks):
    for res in ranks:
        assert res["global_loss_opt_out"] <= 1e-12
        assert res["check_loss_off"] <= 1e-12


def test_forgotten_broadcast_is_harmless(ranks):
    for res in ranks:
        assert res["init_differs"]
        assert res["identical_after_convert"]
        assert res["identical_after_forward"]
        assert res["forgotten_broadcast"] <= 1e-12
        assert res["explicit_broadcast"] == 0.0


def test_drifting_parameters_raise_naming_them(ranks):
    for res in ranks:
        err = res["drift"]
        assert err["type"] == "RuntimeError", err
        assert "convs.1.lin_l.weight" in err["message"]
        assert "differ between ranks" in err["message"]
        assert "check_parameters_every=0" in err["message"]
        assert res["drift_eval_not_checked"]["type"] is None
        assert res["drift_check_off"]["type"] is None


def test_check_interval(ranks):
    for res in ranks:
        assert res["interval"] == [None, None, None, None, "RuntimeError"]
        assert "convs.0.lin_r.weight" in res["interval_message"]


def test_unsynchronised_gradients_are_caught(ranks):
    for res in ranks:
        err = res["unsynchronised"]
        assert err["type"] == "RuntimeError" and "differ between ranks" in err["message"]
        assert "all_reduce_gradients" in err["message"]
