"""Automatic gradient synchronisation of converted models (SARConfig.sync_gradients): 3 ranks
against single-process PyG on the whole graph, with no all_reduce_gradients call."""
from __future__ import annotations

import copy
import io
from pathlib import Path

import pytest
import torch

import pyg_sar
from pyg_sar.nn import grad_sync

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def ranks(api_p3_launch):
    """The 3 ranks' results of ``training_cases.grad_sync`` (one launch shared with the other
    api files: tests/api/conftest.py)."""
    return api_p3_launch["grad_sync"]


@pytest.mark.parametrize("explicit", [False, True])
def test_training_curve_equals_single_process(ranks, explicit):
    """Six Adam steps: same losses and parameters as PyG, bit-identical on every rank,
    with or without an explicit all_reduce_gradients after each backward."""
    for res in ranks:
        case = res[f"training_explicit_{explicit}"]
        assert case["curve"] <= 1e-12, case
        assert case["params"] <= 1e-10, case
        assert case["identical"], case


def test_gradients_after_backward_are_global(ranks):
    for res in ranks:
        assert res["one_step"] <= 1e-12
        assert res["tiny_buckets"] <= 1e-12
        assert res["deepcopy"] <= 1e-12


def test_explicit_all_reduce_after_auto_sync_does_not_double(ranks):
    for res in ranks:
        assert res["explicit_after_auto"] <= 1e-12


@pytest.mark.parametrize("case", ["accumulate", "accumulate_zeroed"])
def test_gradient_accumulation(ranks, case):
    for res in ranks:
        assert res[case] <= 1e-12
        assert res[case + "_identical"]


def test_autograd_grad_is_local_and_leaves_grad_alone(ranks):
    for res in ranks:
        case = res["autograd_grad"]
        assert case["grad_untouched"]
        assert case["shares_sum"] <= 1e-12
        assert case["shares_local"]


def test_sync_off_keeps_the_old_api(ranks):
    for res in ranks:
        assert res["off_local_differs"] > 1e-3  # per-rank shares, not the global gradient
        assert res["off_explicit"] <= 1e-12
        assert res["reconvert_on"] <= 1e-12


def test_model_reading_its_graph_from_captured_data(ranks):
    """``model()`` over captured data (PyG's tagcn.py style): synchronised and checked."""
    for res in ranks:
        case = res["captured_graph"]
        assert case["curve"] <= 1e-12 and case["params"] <= 1e-10, case
        assert case["local_loss"] == "RuntimeError"
        # Each rank initialises its own parameters: convert, in a job whose context exists,
        # copies rank 0's at once, so the first forward is exact and nothing warns.
        assert res["captured_late_broadcast"] == {"warned": False, "identical": True}


def test_parameter_with_gradient_on_one_rank_only(ranks):
    for res in ranks:
        assert res["rank0_only_param"] == {"grad": [3.0, 3.0], "unused_is_none": True}


# ---- one process -------------------------------------------------------------------------
def _model():
    from torch_geometric.nn import GCN
    torch.manual_seed(0)
    return GCN(3, 4, 2, 2).double()


def test_state_pickles_and_reinstalls():
    model = pyg_sar.convert(_model(), pyg_sar.SARConfig(check_parameters_every=7))
    state = model._sar_grad_sync
    assert isinstance(state, grad_sync.GradSync)
    clone = copy.deepcopy(model)
    assert clone._sar_grad_sync is not state
    assert clone._sar_grad_sync.check_every == 7
    assert not clone._sar_grad_sync._installed
    buf = io.BytesIO()
    torch.save(model._sar_grad_sync, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    assert loaded.check_every == 7 and loaded._params == [] and loaded._context is None


def test_the_moved_module_still_resolves_with_a_warning():
    """pyg_sar.distributed.grad_sync moved to pyg_sar.nn.grad_sync (the policy) and
    pyg_sar.distributed.backward (the pass's bookkeeping): the old names resolve for one
    release, warning, and a state pickled under the old path loads."""
    import pickle

    from pyg_sar.distributed import backward
    from pyg_sar.distributed import grad_sync as old
    with pytest.warns(DeprecationWarning, match="pyg_sar.nn.grad_sync"):
        assert old.GradSync is grad_sync.GradSync
    with pytest.warns(DeprecationWarning, match="pyg_sar.distributed.backward"):
        assert old.mark_global_loss is backward.mark_global_loss
    model = pyg_sar.convert(_model(), pyg_sar.SARConfig(check_parameters_every=5))
    state = model._sar_grad_sync
    text = pickle.dumps(state, protocol=2)  # GLOBAL opcodes: the path as plain text
    assert b"pyg_sar.nn.grad_sync" in text
    with pytest.warns(DeprecationWarning):
        loaded = pickle.loads(text.replace(b"pyg_sar.nn.grad_sync",
                                           b"pyg_sar.distributed.grad_sync"))
    assert isinstance(loaded, grad_sync.GradSync) and loaded.check_every == 5


def test_convert_again_updates_and_uninstall_removes():
    model = pyg_sar.convert(_model())
    state = model._sar_grad_sync
    hooks = len(model._forward_pre_hooks)
    pyg_sar.convert(model, pyg_sar.SARConfig(sync_gradients=False, check_loss=False))
    assert model._sar_grad_sync is state and not state.sync and not state.check_loss
    assert len(model._forward_pre_hooks) == hooks
    assert len(model.convs[0]._forward_pre_hooks) == 1  # finds a graph not passed to model
    grad_sync.uninstall(model)
    assert not hasattr(model, "_sar_grad_sync")
    assert len(model._forward_pre_hooks) == hooks - 1
    assert len(model._forward_hooks) == 0 and len(model.convs[0]._forward_pre_hooks) == 0


def test_one_process_gradients_are_pyg_s():
    from torch_geometric.data import Data
    g = torch.Generator().manual_seed(1)
    data = Data(x=torch.randn(10, 3, generator=g, dtype=torch.float64),
                edge_index=torch.randint(0, 10, (2, 30), generator=g))
    ref, model = _model(), pyg_sar.convert(_model())
    ref(data.x, data.edge_index).square().sum().backward()
    model(data.x, data.edge_index).square().sum().backward()  # a plain edge_index: PyG's path
    for p, q in zip(ref.parameters(), model.parameters()):
        assert torch.equal(p.grad, q.grad)


def test_config_fields_are_checked():
    with pytest.raises(ValueError, match="sync_gradients must be True or False"):
        pyg_sar.SARConfig(sync_gradients=1)
    with pytest.raises(ValueError, match="check_parameters_every must be an integer >= 0"):
        pyg_sar.SARConfig(check_parameters_every=-1)
    with pytest.raises(ValueError, match="check_loss must be True or False"):
        pyg_sar.SARConfig(check_loss="yes")


def test_fingerprints_see_one_bit():
    a = torch.randn(100, dtype=torch.float64)
    b = a.clone()
    b[17] = torch.nextafter(b[17], torch.tensor(1.0, dtype=torch.float64))
    fa, fb = grad_sync.fingerprints([a, a.float()], torch.device("cpu")), \
        grad_sync.fingerprints([b, a.float()], torch.device("cpu"))
    assert fa[0] != fb[0] and fa[1] == fb[1]


def test_print_and_log_stay_out_of_star_import(capsys):
    namespace: dict = {}
    exec("from pyg_sar import *", namespace)
    assert "print" not in namespace and "log" not in namespace
    assert "barrier" in namespace and "global_sum" in namespace
    pyg_sar.print("once", 1)
    pyg_sar.log(Epoch=3, Loss=0.5)
    assert capsys.readouterr().out == "once 1\nEpoch: 003, Loss: 0.5000\n"
    assert pyg_sar.global_sum(torch.tensor([1.0, 2.0])).tolist() == [1.0, 2.0]
    pyg_sar.barrier()


def test_copied_converted_layer_keeps_one_state():
    """A converted layer as the whole model: its copy (whose pickled state may leave the
    attribute behind) converted again still has one set of hooks."""
    from torch_geometric.nn import GCNConv
    layer = copy.deepcopy(pyg_sar.convert(GCNConv(3, 4)))
    pyg_sar.convert(layer)
    owners = [h.__self__ for h in layer._forward_pre_hooks.values()
              if isinstance(getattr(h, "__self__", None), grad_sync.GradSync)]
    assert len(owners) == 1 and layer._sar_grad_sync is owners[0]
