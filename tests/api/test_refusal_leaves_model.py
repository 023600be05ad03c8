"""``pyg_sar.convert`` refuses before it changes anything: for every recipe of the zoo
(homogeneous layers and models, heterogeneous models) that ``convert`` refuses, and for a
refused ``to_hetero_with_bases`` model, the model afterwards has the same classes, instance
attributes, hooks and state, and computes the same output as before the attempt."""
from __future__ import annotations

import pytest
import torch

import pyg_sar
from pyg_sar.testing.zoo_hetero_recipes import HETERO_RECIPES, make_hetero_graph
from pyg_sar.testing.zoo_hetero_recipes import whole_inputs as hetero_inputs
from pyg_sar.testing.zoo_models import MODEL_RECIPES
from pyg_sar.testing.zoo_rank import graph_info, make_graph, whole_inputs
from pyg_sar.testing.zoo_recipes import CONV_RECIPES, package_available

_HOOK_TABLES = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks",
                "_backward_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
                "_propagate_forward_pre_hooks", "_propagate_forward_hooks",
                "_message_forward_pre_hooks", "_message_forward_hooks",
                "_aggregate_forward_pre_hooks", "_aggregate_forward_hooks",
                "_message_and_aggregate_forward_pre_hooks",
                "_message_and_aggregate_forward_hooks", "_edge_update_forward_pre_hooks",
                "_edge_update_forward_hooks")


def _snapshot(model: torch.nn.Module) -> dict:
    """What a refused convert must leave as it was."""
    return {
        "classes": [(n, type(m)) for n, m in model.named_modules()],
        "attributes": [(n, {k: id(v) for k, v in vars(m).items()
                            if k not in ("_parameters", "_buffers", "_modules")})
                       for n, m in model.named_modules()],
        "hooks": [(n, {t: list(getattr(m, t, {}).values()) for t in _HOOK_TABLES})
                  for n, m in model.named_modules()],
        "state": {k: v.detach().clone() for k, v in model.state_dict().items()},
    }


def _assert_unchanged(model: torch.nn.Module, before: dict) -> None:
    after = _snapshot(model)
    assert after["classes"] == before["classes"], "a module's class changed"
    for (name, was), (_, now) in zip(before["attributes"], after["attributes"], strict=True):
        assert now == was, f"module '{name}': attributes changed: {set(now) ^ set(was)}"
    for (name, was), (_, now) in zip(before["hooks"], after["hooks"], strict=True):
        assert now == was, f"module '{name}': hooks changed"
    assert after["state"].keys() == before["state"].keys()
    for key, value in before["state"].items():
        assert torch.equal(after["state"][key], value), key


def _outputs(out):
    return out if isinstance(out, dict) else {"out": out}


@pytest.fixture(scope="module")
def graph():
    return make_graph()


@pytest.fixture(scope="module")
def hetero_graph():
    return make_hetero_graph()


def _homogeneous():
    return [pytest.param(r, id=r.name) for r in CONV_RECIPES + MODEL_RECIPES
            if package_available(r.requires)]


def _hetero():
    return [pytest.param(r, id=r.name) for r in HETERO_RECIPES
            if package_available(r.requires)]


def _check(module, call, refusals: list) -> None:
    torch.manual_seed(3)
    try:
        want = _outputs(call(module))
    except (ValueError, RuntimeError):  # needs inputs this plain call does not give (sorted
        want = None                     # edges for LSTM aggregation): compare the rest
    before = _snapshot(module)
    try:
        pyg_sar.convert(module)
    except pyg_sar.UnsupportedLayerError as refusal:
        refusals.append(str(refusal))
        _assert_unchanged(module, before)
        if want is None:
            return
        torch.manual_seed(3)
        got = _outputs(call(module))
        assert got.keys() == want.keys()
        for key in want:
            assert torch.equal(got[key], want[key]), f"output '{key}' changed"


REFUSED: dict[str, list] = {"homogeneous": [], "hetero": []}


@pytest.mark.parametrize("recipe", _homogeneous())
def test_refused_homogeneous_recipe_is_unchanged(graph, recipe):
    torch.manual_seed(7)
    module = recipe.make(graph_info(graph)).double().train(recipe.train)
    _check(module, lambda m: recipe.call(m, whole_inputs(graph)), REFUSED["homogeneous"])


@pytest.mark.parametrize("recipe", _hetero())
def test_refused_hetero_recipe_is_unchanged(hetero_graph, recipe):
    torch.manual_seed(7)
    module = recipe.make(hetero_graph)
    _check(module, lambda m: recipe.call(m, hetero_inputs(hetero_graph, requires_grad=False)),
           REFUSED["hetero"])


def test_refused_to_hetero_with_bases_is_unchanged(hetero_graph):
    """to_hetero_with_bases over an attention layer is refused (its per-edge-type weight sits
    in ``message``, which pyg_sar's attention does not call): before, convert had removed
    PyG's message hook and replaced ``message`` by then."""
    from torch_geometric.nn import GATConv, SAGEConv, to_hetero_with_bases

    from pyg_sar.testing.zoo_hetero_recipes import HIDDEN, OUT, TwoConvs
    data = hetero_graph.clone()
    for node_type in data.node_types:  # features of one width: no lazy projection
        data[node_type].x = torch.randn(data[node_type].num_nodes, HIDDEN).double()
    torch.manual_seed(7)
    model = to_hetero_with_bases(
        TwoConvs(GATConv(HIDDEN, HIDDEN, add_self_loops=False), SAGEConv(HIDDEN, OUT),
                 project=False), data.metadata(), num_bases=2).double()
    refusals: list = []
    _check(model, lambda m: m(data.x_dict, data.edge_index_dict), refusals)
    assert refusals and "to_hetero_with_bases" in refusals[0], refusals


def test_the_zoo_has_refused_recipes():
    """The checks above ran on refusals (the zoo refuses some layers): run last."""
    if not REFUSED["homogeneous"]:
        pytest.skip("run with the recipe tests of this file (they collect the refusals)")
    assert len(REFUSED["homogeneous"]) >= 10, REFUSED["homogeneous"]


def _converted_then_unconverted(module, call) -> bool:
    """Convert (False when refused), unconvert, and check the forward equals the model's
    before conversion."""
    torch.manual_seed(3)
    try:
        want = _outputs(call(module))
    except (ValueError, RuntimeError):
        want = None
    try:
        pyg_sar.convert(module)
    except pyg_sar.UnsupportedLayerError:
        return False
    pyg_sar.unconvert(module)
    if want is not None:
        torch.manual_seed(3)
        got = _outputs(call(module))
        for key in want:
            assert torch.equal(got[key], want[key]), f"output '{key}' after unconvert"
    return True


def test_unconverted_zoo_holds_no_pyg_sar_object(graph, hetero_graph, tmp_path):
    """``unconvert`` of every recipe that converts gives the plain model back: the same
    forward as before conversion, and a pickle that loads where pyg_sar cannot be imported."""
    import pickle
    import subprocess
    import sys
    models = {}
    for recipe in CONV_RECIPES + MODEL_RECIPES:
        if not package_available(recipe.requires):
            continue
        torch.manual_seed(7)
        module = recipe.make(graph_info(graph)).double().train(recipe.train)
        if _converted_then_unconverted(module, lambda m, r=recipe: r.call(m, whole_inputs(graph))):
            models[recipe.name] = module
    for recipe in HETERO_RECIPES:
        if not package_available(recipe.requires):
            continue
        torch.manual_seed(7)
        module = recipe.make(hetero_graph)
        inputs = hetero_inputs(hetero_graph, requires_grad=False)
        if _converted_then_unconverted(module, lambda m, r=recipe, i=inputs: r.call(m, i)):
            models[f"hetero:{recipe.name}"] = module
    assert len(models) >= 150, len(models)
    saved, foreign = {}, []
    for name, module in models.items():
        try:
            blob = pickle.dumps(module)
        except (pickle.PicklingError, AttributeError, TypeError):
            continue  # a model PyG itself cannot pickle (a lambda in it): nothing to check
        modules = _pickled_modules(blob)
        # The zoo's own user classes and functions live in pyg_sar.testing; anything else of
        # pyg_sar left in the model is what unconvert must remove.
        left = sorted(m for m in modules if m.split(".")[0] == "pyg_sar"
                      and not m.startswith("pyg_sar.testing"))
        if left:
            foreign.append(f"{name}: {left}")
        if not any(m.split(".")[0] == "pyg_sar" for m in modules):
            saved[name] = blob
    assert not foreign, "pyg_sar objects left after unconvert:\n" + "\n".join(foreign)
    (tmp_path / "models.pkl").write_bytes(pickle.dumps(saved))
    code = ("import pickle, sys\n"
            "sys.modules['pyg_sar'] = None  # any pyg_sar object in a pickle fails to load\n"
            f"saved = pickle.loads(open({str(tmp_path / 'models.pkl')!r}, 'rb').read())\n"
            "bad = []\n"
            "for name, blob in saved.items():\n"
            "    try:\n"
            "        pickle.loads(blob)\n"
            "    except Exception as e:\n"
            "        bad.append(f'{name}: {type(e).__name__}: {e}')\n"
            "print(len(saved), 'loaded'); print('\\n'.join(bad)); sys.exit(1 if bad else 0)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert len(saved) >= 150, len(saved)


def _pickled_modules(blob: bytes) -> set[str]:
    """The modules of every class and function a pickle refers to."""
    import pickletools
    found, strings = set(), []
    for op, arg, _ in pickletools.genops(blob):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
        elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
            found.add(strings[-2])
        elif op.name == "GLOBAL":
            found.add(arg.split(" ")[0])
    return found
