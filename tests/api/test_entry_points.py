"""Every entry point of a converted model is covered, not only ``forward``: at P = 3 against
single-process PyG, with each rank initialising its own parameters (``training_cases.
entry_points``, in the shared 3-rank launch of tests/api/conftest.py).

* a link model trained through ``model.encode`` / ``model.decode`` (never ``forward``) and an
  MLP whose forward never sees a graph: same training curve and parameters as one process,
  bit-identical on every rank;
* a per-rank loss through those methods raises on every rank and gives the gradients back;
* a parameter that drifts on one rank raises at the next backward pass, naming it;
* the whole graph given to a converted model while training raises; under ``no_grad`` the
  output is PyG's.
"""
from __future__ import annotations

import pytest

TOL = 1e-10
# Parameters after five Adam steps: Adam divides each gradient by its own running norm, so a
# rounding difference of ~1e-16 in a near-zero gradient entry (batch norm's shift in the MLP)
# moves that parameter by up to ~1e-10 of its size; the loss curve is held to TOL.
PARAM_TOL = 1e-9


@pytest.fixture(scope="module")
def ranks(api_p3_launch):
    return api_p3_launch["entry_points"]


@pytest.mark.parametrize("case", ["encode_decode", "mlp"])
def test_trains_as_one_process_whichever_method_runs(ranks, case):
    for res in ranks:
        got = res[case]
        assert got["curve"] <= TOL and got["params"] <= PARAM_TOL, got
        assert got["identical"], got


@pytest.mark.parametrize("case", ["encode_local_loss", "mlp_local_loss"])
def test_per_rank_loss_is_refused_on_every_rank(ranks, case):
    for res in ranks:
        err = res[case]
        assert err["type"] == "RuntimeError", err
        assert "not reduced over ranks" in err["message"]
        assert "SF.cross_entropy" in err["message"]  # names the fix
    assert all(res["encode_local_loss_grads_none"] for res in ranks)


@pytest.mark.parametrize("case,name", [("encode_drift", "rel"), ("mlp_drift", "lins.1.bias")])
def test_drifted_parameters_raise_at_the_next_backward(ranks, case, name):
    for res in ranks:
        err = res[case]
        assert err["type"] == "RuntimeError", err
        assert "differ between ranks" in err["message"] and name in err["message"], err


def test_whole_graph_refused_while_training(ranks):
    for res in ranks:
        err = res["whole_graph_training"]
        assert err["type"] == "ValueError", err
        assert "plain edge_index" in err["message"] and "3 times" in err["message"]
        assert res["whole_graph_no_grad"] <= 1e-12


def test_global_f1_equals_the_whole_graphs(ranks):
    for res in ranks:
        assert res["f1"]["macro"] <= 1e-12 and res["f1"]["micro"] <= 1e-12, res["f1"]
        assert res["f1_micro_is_accuracy"] <= 1e-12
