"""Rank side (and P = 1 side) of the GPSConv tests (:mod:`pyg_sar.nn.global_attention`).

Each case builds PyG's ``GPSConv`` (GINConv local layer, float64, the same parameters on every
rank), runs it on the whole graph in one process as the reference, then the distributed
forward (:func:`~pyg_sar.nn.global_attention.gps_forward`) on this rank's rows with its GINConv
and batch norms converted, and reports the largest relative errors of the output rows, the
input gradient rows, the loss ``sum(out * c)`` (summed over ranks) and every parameter gradient
(summed over ranks, as grad_sync does). Attention-dropout cases have no PyG reference (torch's
mask is one Bernoulli draw over ``[H, N, N]``): they return their output rows (with original
ids), input gradient and parameter gradients for the test to compare P = 1 with P = 3.
"""
from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.nn import GINConv, GPSConv

from tests.closeness import rel_error

NUM_NODES = 64
C = 8
SEED = 7
DROPOUT_SEED = 2024
MODES = ("sar", "sa", "halo")
# name -> GPSConv options (train: training mode; eval cases get random running statistics)
CASES: dict[str, dict[str, Any]] = {
    "mha_bn": dict(heads=2, norm="batch_norm", train=True),
    "mha_none": dict(heads=2, norm=None, train=True),
    # PyG's LayerNorm per node (its forward takes batch: GPSConv passes it)
    "mha_layernorm_node": dict(heads=2, norm="layer_norm", norm_kwargs=dict(mode="node"),
                               train=True),
    "mha_bn_eval_nobias": dict(heads=2, norm="batch_norm", train=False,
                               attn_kwargs=dict(bias=False)),
    "mha_1head_noconv": dict(heads=1, norm="batch_norm", train=True, conv=False),
    "performer": dict(heads=2, norm="batch_norm", train=True, attn_type="performer"),
    "dropout": dict(heads=2, norm="batch_norm", train=True, attn_kwargs=dict(dropout=0.3)),
    # a user's model: a Linear, then a multihead and a performer GPSConv (ledger labels
    # "convs.0.attn", ...), called with batch = zeros (one graph)
    "model_two_layers": dict(model=True, train=True),
}
# variant "case/mode/path": the softmax cases in every mode (the performer's sums are
# mode-free); path "convert": the whole GPSConv through pyg_sar.convert (its registered
# forward, gradients summed by grad_sync), "direct": gps_forward called on a GPSConv whose
# GINConv and norms alone were converted
VARIANTS = [f"{name}/{mode}/{path}" for name, case in CASES.items() for mode in MODES
            for path in ("convert", "direct")
            if (case.get("attn_type", "multihead") == "multihead" or mode == "sar")
            and (path == "convert" or name in ("mha_bn", "dropout"))]


def make_data(seed: int = 0) -> Data:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(NUM_NODES, C, generator=g, dtype=torch.float64)
    ei = torch.randint(0, NUM_NODES, (2, 256), generator=g)
    return Data(x=x, edge_index=ei, num_nodes=NUM_NODES)


class TwoLayers(torch.nn.Module):
    """A user's graph transformer: ``Linear``, then two GPSConv layers (multihead, then
    performer attention), ReLU between."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(C, C)
        self.convs = torch.nn.ModuleList([
            GPSConv(C, GINConv(torch.nn.Linear(C, C)), heads=2),
            GPSConv(C, GINConv(torch.nn.Linear(C, C)), heads=2, attn_type="performer",
                    attn_kwargs=dict(head_channels=4))])

    def forward(self, x: Tensor, edge_index, batch: Optional[Tensor] = None) -> Tensor:
        x = self.lin(x)
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index, batch)
            x = x.relu() if i == 0 else x
        return x


def build(name: str) -> torch.nn.Module:
    """The case's GPSConv (or model), the same on every rank (seeded; eval cases get random
    running statistics so that they matter)."""
    case = CASES[name]
    torch.manual_seed(SEED)
    if case.get("model"):
        return TwoLayers().double().train(case["train"])
    conv = None
    if case.get("conv", True):
        conv = GINConv(torch.nn.Sequential(torch.nn.Linear(C, C), torch.nn.ReLU(),
                                           torch.nn.Linear(C, C)), train_eps=True)
    model = GPSConv(C, conv, heads=case["heads"], norm=case["norm"],
                    attn_type=case.get("attn_type", "multihead"),
                    attn_kwargs=case.get("attn_kwargs"), norm_kwargs=case.get("norm_kwargs"))
    model = model.double().train(case["train"])
    for norm in (model.norm1, model.norm2, model.norm3):
        if norm is not None and hasattr(norm, "module"):
            with torch.no_grad():
                norm.module.running_mean.normal_()
                norm.module.running_var.uniform_(0.5, 2.0)
    return model


def _weights(shape) -> Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(11), dtype=torch.float64)


def reference(name: str, data: Data, attention_dropout: Optional[float] = None) -> dict:
    """PyG's GPSConv on the whole graph (one process, batch=None); ``attention_dropout``
    replaces the case's attention dropout probability."""
    model = build(name)
    if attention_dropout is not None:
        model.attn.dropout = attention_dropout
    x = data.x.clone().requires_grad_()
    if CASES[name].get("model"):
        out = model(x, data.edge_index, torch.zeros(NUM_NODES, dtype=torch.long))
    else:
        out = model(x, data.edge_index)
    c = _weights(out.shape)
    loss = (out * c).sum()
    loss.backward()
    return {"out": out.detach(), "x": x.grad, "c": c, "loss": loss.detach(),
            "params": {k: p.grad if p.grad is not None else torch.zeros_like(p)
                       for k, p in model.named_parameters()}}


def distributed_model(name: str, mode: str, path: str) -> GPSConv:
    """The case's GPSConv converted whole (``path="convert"``: grad_sync sums the gradients),
    or only its GINConv and batch norms (``"direct"``: gradients left per rank)."""
    import pyg_sar
    model = build(name)
    if path == "convert":
        # the loss below is this rank's share of a global sum, not a pyg_sar loss
        return pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode, check_loss=False))
    cfg = pyg_sar.SARConfig(mode=mode, sync_gradients=False, broadcast_parameters=False,
                            check_parameters_every=0, check_loss=False)
    for sub in (model.conv, model.norm1, model.norm2, model.norm3):
        if sub is not None:
            pyg_sar.convert(sub, cfg)
    model._sar_config = cfg
    return model


def run_distributed(name: str, mode: str, path: str, data: Data, graph, nid: Tensor,
                    comm) -> dict:
    """The distributed forward and backward of one case on this rank's rows: output rows,
    input gradient rows, the global loss and parameter gradients summed over ranks."""
    from pyg_sar.nn.global_attention import gps_forward
    model = distributed_model(name, mode, path)
    x = data.x[nid].clone().requires_grad_()
    torch.manual_seed(DROPOUT_SEED)  # the attention dropout's seed: equal on every rank
    if CASES[name].get("model"):
        out = model(x, graph, torch.zeros(len(nid), dtype=torch.long))
    else:
        out = model(x, graph) if path == "convert" else gps_forward(model, x, graph)
    loss = (out * _weights((NUM_NODES, C))[nid]).sum()
    loss.backward()
    total = loss.detach().clone().reshape(1)
    grads = {k: (p.grad if p.grad is not None else torch.zeros_like(p)).clone()
             for k, p in model.named_parameters()}
    if comm is not None:
        comm.all_reduce(total, op="sum")
        if path == "direct":  # summed over ranks, as grad_sync does
            for g in grads.values():
                comm.all_reduce(g, op="sum")
    return {"out": out.detach(), "x": x.grad, "loss": total[0], "params": grads}


_REFERENCES: dict[str, dict] = {}


def run_case(variant: str, data: Data, graph, nid: Tensor, comm) -> dict:
    """Relative errors against PyG (``{"errors": ...}``), or for a dropout case the results
    themselves as lists (``{"dropout": ...}``)."""
    name, mode, path = variant.split("/")
    got = run_distributed(name, mode, path, data, graph, nid, comm)
    if CASES[name].get("attn_kwargs", {}).get("dropout", 0.0) > 0.0:
        return {"dropout": {"ids": nid.tolist(), "out": got["out"].tolist(),
                            "x": got["x"].tolist(), "loss": float(got["loss"]),
                            "params": {k: g.reshape(-1).tolist()
                                       for k, g in got["params"].items()}}}
    if name not in _REFERENCES:  # one per case (the same data in every mode and path)
        _REFERENCES[name] = reference(name, data)
    ref = _REFERENCES[name]
    errors = {"out": rel_error(got["out"], ref["out"][nid]),
              "x": rel_error(got["x"], ref["x"][nid]),
              "loss": rel_error(got["loss"].reshape(1), ref["loss"].reshape(1))}
    missing = sorted(set(ref["params"]) ^ set(got["params"]))
    if missing:
        raise AssertionError(f"parameter names differ: {missing}")
    # A gradient that is zero in exact arithmetic (a bias right before a training-mode batch
    # norm) is rounding noise on both sides: compared against the largest parameter gradient.
    top = max(float(g.abs().max()) for g in ref["params"].values())
    for k, g in got["params"].items():
        rg = ref["params"][k]
        if float(rg.abs().max()) < 1e-12 * top:
            errors[f"param(zero):{k}"] = float((g - rg).abs().max()) / top
        else:
            errors[f"param:{k}"] = rel_error(g, rg)
    return {"errors": errors}


def refusals(graph, nid: Tensor, rank: int) -> dict[str, Optional[str]]:
    """The options refused with a reason (``ValueError`` text; ``None`` if not refused)."""
    from pyg_sar.nn.global_attention import gps_forward, mha_forward
    out: dict[str, Optional[str]] = {}
    x = torch.zeros(len(nid), C, dtype=torch.float64)

    def attempt(key, call):
        try:
            call()
            out[key] = None
        except ValueError as e:
            out[key] = str(e)

    for key, kw in (("add_bias_kv", dict(add_bias_kv=True)),
                    ("add_zero_attn", dict(add_zero_attn=True))):
        model = GPSConv(C, None, heads=2, attn_kwargs=kw).double()
        attempt(key, lambda m=model: gps_forward(m, x, graph))
    mha = torch.nn.MultiheadAttention(C, 2, kdim=C + 1, vdim=C + 1).double()
    attempt("kdim", lambda: mha_forward(mha, x, graph))
    model = GPSConv(C, None, heads=2).double()
    model.attn_type = "bigbird"
    attempt("attn_type", lambda: gps_forward(model, x, graph))
    # A batch of two graphs: the 1 sits on the last rank only; every rank refuses.
    batch = torch.zeros(len(nid), dtype=torch.long)
    if rank == graph.world_size - 1 and len(nid):
        batch[-1] = 1
    model = GPSConv(C, None, heads=2).double()
    attempt("batch", lambda: gps_forward(model, x, graph, batch))
    return out


def ranks(ctx, parts: str, variants: list[str]) -> dict:
    """Rank side of the P = 3 launch."""
    import pyg_sar
    part = pyg_sar.load_partition(parts, ctx.rank)
    data = make_data()
    res: dict[str, Any] = {"rows": int(len(part.node_ids))}
    for v in variants:
        ctx.comm.traffic.reset()
        # a failing case raises: the launch fails with this rank's traceback (the other ranks
        # would wait in the ring; the launch's timeout ends them)
        res[v] = run_case(v, data, part.graph, part.node_ids, ctx.comm)
        res[v]["traffic"] = ctx.comm.traffic.as_dict()
    res["refusals"] = refusals(part.graph, part.node_ids, ctx.rank)
    return res
