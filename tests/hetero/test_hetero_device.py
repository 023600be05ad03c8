"""Heterogeneous models on each device (P = 1, in this process): to_hetero, HeteroConv, HGTConv
and HANConv on a heterogeneous partition moved to the device equal single-process PyG on the
whole HeteroData on the same device (every node type's output, every input gradient and every
parameter gradient), float64 where the device has it and float32. Part of the GPU check
(``bash .ci/gpu`` runs the ``device`` marker with CUDA mandatory)."""
from __future__ import annotations

import copy

import pytest
import torch

import pyg_sar
from pyg_sar.testing.devices import require_native, supports_float64, with_devices
from tests.closeness import rel_error
from tests.hetero import hetero_attention_cases as hac
from tests.hetero import hetero_cases as hc

pytestmark = pytest.mark.device

CASES = ("to_hetero/sage_mean/sum", "to_hetero/gat/mean", "to_hetero/sage_bn/max",
         "heteroconv/sum", "hgt", "han")
TOL = {"float64": 1e-10, "float32": 1e-4}


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    root = tmp_path_factory.mktemp("hetero_device")
    pyg_sar.partition_graph(hc.make_hetero(), 1, root / "h1", method="random", seed=1)
    return root / "h1"


def _build(name: str, data):
    """The reference model of ``name`` and whether it takes edge attributes."""
    if name in hac.MODELS:
        return hac.MODELS[name](data.metadata()), False
    return hc.build(name, data.metadata())


def _call(model, x_dict, graphs, attrs, with_edges: bool):
    out = model(x_dict, graphs, attrs) if with_edges else model(x_dict, graphs)
    return out[0] if isinstance(out, tuple) else out


def _run(model, x_dict, graphs, attrs, with_edges, weights, rows=None):
    x = {t: v.clone().requires_grad_() for t, v in x_dict.items()}
    out = _call(model, x, graphs, attrs, with_edges)
    sum((out[t] * (weights[t] if rows is None else weights[t][rows[t]])).sum()
        for t in out).backward()
    return out, x


@with_devices
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", CASES)
def test_hetero_model_matches_pyg_on_the_device(parts, device, name, dtype):
    dev = require_native(device)
    if dtype == "float64" and not supports_float64(dev):
        pytest.skip(f"{dev.type} has no float64")
    dt = getattr(torch, dtype)
    data = hc.make_hetero()
    x_all = {t: v.to(dev, dt) for t, v in data.x_dict.items()}
    ei_all = {k: v.to(dev) for k, v in data.edge_index_dict.items()}
    ea_all = {k: v.to(dev, dt) for k, v in data.edge_attr_dict.items()}
    torch.manual_seed(7)
    ref, with_edges = _build(name, data)
    ref = ref.to(dev, dt)
    with torch.no_grad():  # lazy parameters initialised on the whole graph
        _call(ref, x_all, ei_all, ea_all, with_edges)
    dist = pyg_sar.convert(copy.deepcopy(ref), pyg_sar.SARConfig(check_loss=False))
    # the backward weights, sized to each node type's output
    out_probe = _call(copy.deepcopy(ref), x_all, ei_all, ea_all, with_edges)
    weights = {t: torch.randn(o.shape, generator=torch.Generator().manual_seed(3 + i),
                              dtype=torch.float64).to(dev, dt)
               for i, (t, o) in enumerate(sorted(out_probe.items()))}
    out_ref, x_ref = _run(ref, x_all, ei_all, ea_all, with_edges, weights)

    part = pyg_sar.load_partition(parts, 0).to(dev)
    ids = {t: v.to(dev) for t, v in part.node_ids_dict.items()}
    x_loc = {t: part.x_dict[t].to(dev, dt) for t in x_all}
    attrs = {k: v.to(dev, dt) for k, v in part.edge_attr_dict.items()}
    out, x = _run(dist, x_loc, part.edge_index_dict, attrs, with_edges, weights, ids)

    tol = TOL[dtype]
    errs = {}
    for t, o in out_ref.items():
        assert out[t].device.type == dev.type, (t, out[t].device)
        errs[f"out:{t}"] = rel_error(out[t].detach(), o.detach()[ids[t]])
        if x_ref[t].grad is not None:
            errs[f"x_grad:{t}"] = rel_error(x[t].grad, x_ref[t].grad[ids[t]])
    ref_grads = dict(ref.named_parameters())
    scale = max(float(p.grad.abs().max()) for p in ref_grads.values() if p.grad is not None)
    for pname, p in dist.named_parameters():
        g = ref_grads[pname].grad
        errs[f"grad:{pname}"] = (0.0 if p.grad is None or not p.grad.any() else 1.0) \
            if g is None else float((p.grad - g).abs().max()) / scale
    worst = {k: v for k, v in errs.items() if v > tol}
    assert not worst, f"{name} {dtype} on {dev}: errors above {tol}: {worst}"
