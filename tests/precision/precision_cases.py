"""Rank-side cases of the precision tests: bfloat16 (autocast and ``model.bfloat16()``) against
float32 single-process PyG, many cases per launch.

Every rank builds the same graph and models. For each case it runs three computations from the
same initial parameters and the same output weighting:

* the oracle: single-process PyG in float32 on the whole graph;
* the baseline: single-process PyG on the whole graph in the case's precision variant;
* pyg_sar on this rank's partition in the same variant (P = 1: the whole graph, one part).

and reports, per tensor (the output, the input gradient, every parameter gradient after the
gradient all-reduce), squared distances from the oracle and the oracle's squared norm, so the
pytest side forms relative L2 distances over the whole graph (rows summed over ranks). It also
reports the dtypes of both sides and, for the cases that ask for it, whether modes ``sar`` and
``sa`` gave bit-identical outputs and gradients.
"""
from __future__ import annotations

import copy
from typing import Optional

import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn import (
    GCN,
    GATConv,
    GATv2Conv,
    GCNConv,
    GINConv,
    GraphConv,
    GraphSAGE,
    SAGEConv,
)
from torch_geometric.nn.aggr import SoftmaxAggregation

import pyg_sar
import pyg_sar.nn.functional as SF

IN = 6
VARIANTS = {
    "autocast": (torch.bfloat16, True),   # torch.autocast("cpu", dtype=bfloat16), float32 model
    "bf16": (torch.bfloat16, False),      # model.bfloat16(), bfloat16 inputs
    "autocast16": (torch.float16, True),  # torch.autocast("cpu", dtype=float16)
}


def make_graph(num_nodes: int = 120, num_edges: int = 720, seed: int = 0) -> Data:
    """Directed, duplicate-free edges with self-loops on some nodes, 4 isolated nodes, edge
    data and labels (a mean's degree beyond bfloat16's exact integers is tested on the combine
    rules directly: ``test_rules.py``)."""
    g = torch.Generator().manual_seed(seed)
    active = num_nodes - 4
    src = torch.randint(0, active, (num_edges,), generator=g)
    dst = torch.randint(0, active, (num_edges,), generator=g)
    loops = torch.arange(0, active, 7)
    ei = torch.cat([torch.stack([src, dst]), torch.stack([loops, loops])], dim=1)
    ei = torch.unique(ei, dim=1)
    ei = ei[:, torch.randperm(ei.shape[1], generator=g)]
    e = ei.shape[1]
    return Data(
        x=torch.randn(num_nodes, IN, generator=g),
        edge_index=ei,
        edge_attr=torch.randn(e, 4, generator=g),
        edge_weight=torch.rand(e, generator=g) + 0.5,
        y=torch.randint(0, 5, (num_nodes,), generator=g),
        train_mask=torch.rand(num_nodes, generator=g) < 0.7,
    )


class Stack(torch.nn.Module):
    """Two layers with a smooth activation between them (``tanh``: no kink whose side a
    rounding could flip, which would make gradient distances jump discontinuously)."""

    def __init__(self, conv1, conv2, edge: Optional[str] = None) -> None:
        super().__init__()
        self.conv1, self.conv2, self.edge = conv1, conv2, edge

    def forward(self, x, edge_index, edge_attr=None, edge_weight=None):
        extra = {}
        if self.edge == "attr":
            extra = {"edge_attr": edge_attr}
        elif self.edge == "weight":
            extra = {"edge_weight": edge_weight}
        return self.conv2(self.conv1(x, edge_index, **extra).tanh(), edge_index, **extra)


def _mlp(i: int, o: int) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(i, 16), torch.nn.Tanh(), torch.nn.Linear(16, o))


MODELS = {
    "gcn": lambda: Stack(GCNConv(IN, 16), GCNConv(16, 5), edge="weight"),
    # 16 -> 5 narrows: pyg_sar projects before aggregating (SAGE's project_first)
    "sage_mean": lambda: Stack(SAGEConv(IN, 16), SAGEConv(16, 5)),
    "sage_max": lambda: Stack(SAGEConv(IN, 16, aggr="max"), SAGEConv(16, 5, aggr="max")),
    "gat": lambda: Stack(GATConv(IN, 4, heads=2, edge_dim=4), GATConv(8, 5, heads=2,
                                                                      concat=False),
                         edge="attr"),
    # slope 0.5: see test_precision.py's docstring (GATv2's many kinks)
    "gatv2": lambda: Stack(GATv2Conv(IN, 4, heads=2, edge_dim=4, negative_slope=0.5),
                           GATv2Conv(8, 5, heads=2, edge_dim=4, concat=False,
                                     negative_slope=0.5), edge="attr"),
    "gin": lambda: Stack(GINConv(_mlp(IN, 16), train_eps=True), GINConv(_mlp(16, 5))),
    "graphconv": lambda: Stack(GraphConv(IN, 16), GraphConv(16, 5, aggr="mean"),
                               edge="weight"),
    "softmax_aggr": lambda: Stack(SAGEConv(IN, 16, aggr=SoftmaxAggregation(learn=True)),
                                  SAGEConv(16, 5, aggr="softmax")),
    # GCN -> DistributedBatchNorm -> tanh -> GCN (PyG's BatchNorm, converted by pyg_sar)
    "gcn_bn": lambda: GCN(IN, 16, num_layers=2, out_channels=5, norm="batch_norm",
                          act="tanh"),
    # SAGE's bf16 output under autocast: the batch norm gets a bf16 input, float32 parameters
    "sage_bn": lambda: GraphSAGE(IN, 16, num_layers=2, out_channels=5, norm="batch_norm",
                                 act="tanh"),
}


def _forward(model, x, edge_index, edge_attr, edge_weight):
    if isinstance(model, Stack):
        return model(x, edge_index, edge_attr=edge_attr, edge_weight=edge_weight)
    return model(x, edge_index)


def _run(model, variant: str, x, edge_index, edge_attr, edge_weight, weight, loss=None):
    """Forward in the variant, backward of ``sum(out * weight)`` (or of ``loss(out)``), outside
    autocast as torch's recipe has it (the engine replays the forward's autocast state);
    returns ``(out, x.grad, the backward's scalar)``."""
    dtype, autocast = VARIANTS.get(variant, (torch.float32, False))
    if not autocast and dtype != torch.float32:
        model.to(dtype)
        x, edge_attr, edge_weight = x.to(dtype), edge_attr.to(dtype), edge_weight.to(dtype)
    x = x.detach().clone().requires_grad_()
    with torch.autocast("cpu", dtype=dtype, enabled=autocast):
        out = _forward(model, x, edge_index, edge_attr, edge_weight)
        value = None if loss is None else loss(out)
    if value is None:
        value = (out.float() * weight).sum()
    value.backward()
    return out.detach(), x.grad, value.detach()


def _loss(name: Optional[str], y, mask, context=None, single: bool = False):
    """The global loss ``name`` of pyg_sar (``single``: torch's own, on the whole graph)."""
    if name is None:
        return None
    if single:
        fn = {"cross_entropy": F.cross_entropy, "nll_loss": F.nll_loss}[name]
        prep = (lambda o: o) if name == "cross_entropy" else (lambda o: o.log_softmax(-1))
        return lambda o: fn(prep(o)[mask], y[mask])
    fn = {"cross_entropy": SF.cross_entropy, "nll_loss": SF.nll_loss}[name]
    if name == "cross_entropy":
        return lambda o: fn(o, y, mask, context=context)
    return lambda o: fn(o.log_softmax(-1), y, mask, context=context)


_BUILT: dict = {}


def _model(name: str) -> torch.nn.Module:
    """A fresh copy of model ``name`` with the parameters of seed 7 (built once: a PyG layer's
    constructor compiles its templates, which is most of a small case's time)."""
    if name not in _BUILT:
        torch.manual_seed(7)
        _BUILT[name] = MODELS[name]()
    return copy.deepcopy(_BUILT[name])


def _weight(num_nodes: int) -> torch.Tensor:
    return torch.randn(num_nodes, 5, generator=torch.Generator().manual_seed(3))


def _result(model, out, xg, value) -> dict:
    return {"out": out, "x_grad": xg, "loss": value.view(1),
            "params": {n: p.grad for n, p in model.named_parameters() if p.grad is not None}}


def single_process(data: Data, model_name: str, variant: str, loss: Optional[str] = None
                   ) -> dict:
    """Plain PyG on the whole graph in ``variant`` (``"float32"``: the oracle)."""
    model = _model(model_name)
    out, xg, value = _run(model, variant, data.x, data.edge_index, data.edge_attr,
                          data.edge_weight, _weight(data.num_nodes),
                          _loss(loss, data.y, data.train_mask, single=True))
    return _result(model, out, xg, value)


def distributed(part, data: Data, model_name: str, variant: str, mode: str = "sar",
                kernels: bool = True, loss: Optional[str] = None) -> dict:
    """pyg_sar on this rank's partition in ``variant`` (gradients all-reduced)."""
    model = _model(model_name)
    pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode, use_kernels=kernels,
                                             check_loss=loss is not None))
    out, xg, value = _run(model, variant, part.x, part.graph, part.edge_attr, part.edge_weight,
                          _weight(data.num_nodes)[part.node_ids],
                          _loss(loss, part.y, part.train_mask, part.graph))
    pyg_sar.all_reduce_gradients(model)
    return _result(model, out, xg, value)


def _same(a: dict, b: dict) -> bool:
    """Bit for bit the same outputs and gradients."""
    return (torch.equal(a["out"], b["out"]) and torch.equal(a["x_grad"], b["x_grad"])
            and a["params"].keys() == b["params"].keys()
            and all(torch.equal(a["params"][k], b["params"][k]) for k in a["params"]))


def _encode(t: torch.Tensor) -> dict:
    """A tensor as JSON: its dtype and its values (exact in float64 for every float dtype)."""
    return {"dtype": str(t.dtype).replace("torch.", ""), "values": t.double().tolist()}


def decode(d: dict) -> torch.Tensor:
    """Inverse of the rank side's encoding (values as float64, dtype as a string)."""
    return torch.tensor(d["values"], dtype=torch.float64)


def case_key(case: list) -> str:
    model, variant, mode, kernels, loss = case
    return f"{model}/{variant}/{mode}/k{int(kernels)}" + (f"/{loss}" if loss else "")


def run_cases(part, data: Data, cases: list, encode: bool = False) -> dict:
    """pyg_sar's result of every case on this rank; with mode ``"sar+sa"`` also whether mode
    ``"sa"`` gives bit-identical outputs and gradients."""
    out = {}
    for model, variant, mode, kernels, loss in cases:
        got = distributed(part, data, model, variant, mode.split("+")[0], kernels, loss)
        res = dict(got, node_ids=part.node_ids)
        if mode == "sar+sa":
            res["sar_equals_sa"] = _same(got, distributed(part, data, model, variant, "sa",
                                                          kernels, loss))
        if encode:
            res = {"out": _encode(res["out"]), "x_grad": _encode(res["x_grad"]),
                   "loss": _encode(res["loss"]), "node_ids": res["node_ids"].tolist(),
                   "params": {k: _encode(v) for k, v in res["params"].items()},
                   "sar_equals_sa": res.get("sar_equals_sa")}
        out[case_key([model, variant, mode, kernels, loss])] = res
    return out


def suite(ctx, parts: str, cases: list) -> dict:
    """Rank side of the multi-rank test: every case on this rank's part, as JSON."""
    data = make_graph()
    part = pyg_sar.load_partition(parts, ctx.rank)
    return run_cases(part, data, cases, encode=True)
