"""Rank side (and P = 1 side) of the linear global attention tests
(:mod:`pyg_sar.nn.adapters.linear_attention`): every case runs PyG's module on the whole graph in
one process (float64) and the distributed forward on this rank's rows, and reports the largest
relative errors of the output rows, the input gradient rows and every parameter gradient (summed
over ranks, as grad_sync does), plus the numbers all-reduced per case."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.nn.attention import (
    PerformerAttention,
    PolynormerAttention,
    SGFormerAttention,
)
from torch_geometric.nn.models import Polynormer, SGFormer
from torch_geometric.nn.models.sgformer import SGModule

from pyg_sar.nn.adapters.linear_attention import (
    performer_attention_forward,
    polynormer_attention_forward,
    polynormer_forward,
    sgformer_attention_forward,
    sgmodule_forward,
)

# PyG's SGFormerAttention builds ``torch.ones`` in the default dtype: float64 references run
# under a float64 default.
from pyg_sar.testing.zoo_models import default_dtype
from tests.closeness import rel_error

NUM_NODES = 61
IN = 6


def make_data(seed: int = 0) -> Data:
    """Features with a few exact zeros (SGFormer replaces zeros of q and k by epsilon) and
    a random graph (linear attention does not read the edges; the partition does)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(NUM_NODES, IN, generator=g, dtype=torch.float64)
    x[3] = 0.0
    ei = torch.randint(0, NUM_NODES, (2, 240), generator=g)
    return Data(x=x, edge_index=ei, num_nodes=NUM_NODES)


def make_mask() -> Tensor:
    """PyG's validity mask over all nodes: every fifth node padded."""
    mask = torch.ones(NUM_NODES, dtype=torch.bool)
    mask[::5] = False
    return mask


# name -> (module factory, distributed forward, numbers in the sums' all-reduce; Performer
# all-reduces 2 more per forward: its projection matrix's equality check)
CASES: dict[str, tuple[Callable[[], torch.nn.Module], Callable, int]] = {
    "sgformer": (lambda: SGFormerAttention(IN, heads=2, head_channels=4, qkv_bias=True),
                 sgformer_attention_forward, 2 * 4 * 5),
    "sgformer_1head": (lambda: SGFormerAttention(IN, heads=1, head_channels=5),
                       sgformer_attention_forward, 1 * 5 * 6),
    "polynormer": (lambda: PolynormerAttention(IN, heads=2, head_channels=3, qkv_bias=True,
                                               beta=0.7),
                   polynormer_attention_forward, 3 * 2 * 4),
    "polynormer_qk_separate": (lambda: PolynormerAttention(IN, heads=3, head_channels=2,
                                                           qk_shared=False),
                               polynormer_attention_forward, 2 * 3 * 3),
    "performer": (lambda: PerformerAttention(IN, heads=2, head_channels=4),
                  performer_attention_forward, 2 * int(4 * torch.log(torch.tensor(4.0))) * 5),
}
# variants: (case, mask?, input as PyG's dense batch [1, n, F]?)
VARIANTS = {f"{name}{suffix}": (name, mask, dense)
            for name in CASES
            for suffix, mask, dense in (("", False, False), ("/mask", True, False),
                                        ("/dense", False, True))}


def build(name: str) -> torch.nn.Module:
    torch.manual_seed(7)  # the same parameters (and Performer projection) on every rank
    with default_dtype(torch.float64):
        return CASES[name][0]().double().eval()


def reference(name: str, data: Data, mask: Optional[Tensor]) -> dict:
    """PyG on the whole graph: output, input gradient and parameter gradients of
    ``sum(out * c)``."""
    module = build(name)
    x = data.x.clone().requires_grad_()
    with default_dtype(torch.float64):
        out = module(x[None], None if mask is None else mask[None])[0]
    c = torch.randn(out.shape, generator=torch.Generator().manual_seed(11),
                    dtype=torch.float64)
    (out * c).sum().backward()
    return {"out": out.detach(), "x": x.grad, "c": c,
            "params": {k: p.grad for k, p in module.named_parameters()}}


class CountingComm:
    """Counts the numbers all-reduced through a communicator (patched on the instance)."""

    def __init__(self, comm) -> None:
        self.numbers = 0
        if comm is None:
            return
        inner = comm.all_reduce

        def all_reduce(tensor, *args, **kwargs):
            self.numbers += tensor.numel()
            return inner(tensor, *args, **kwargs)
        comm.all_reduce = all_reduce
        self._undo = (comm, inner)

    def restore(self) -> None:
        if hasattr(self, "_undo"):
            self._undo[0].all_reduce = self._undo[1]


def run_case(variant: str, data: Data, graph, nid: Tensor, comm) -> dict:
    """One variant on this rank's rows ``nid`` (original ids): relative errors and the
    numbers all-reduced (forward + backward)."""
    name, use_mask, dense = VARIANTS[variant]
    mask = make_mask() if use_mask else None
    ref = reference(name, data, mask)
    module = build(name)
    forward = CASES[name][1]
    x = data.x[nid].clone().requires_grad_()
    m = None if mask is None else mask[nid]
    counter = CountingComm(comm)
    try:
        with default_dtype(torch.float64):
            out = forward(module, x[None] if dense else x, graph,
                          None if m is None else (m[None] if dense else m))
        if dense:
            assert out.dim() == 3 and out.shape[0] == 1, tuple(out.shape)
            out = out[0]
        (out * ref["c"][nid]).sum().backward()
        grads = {k: (p.grad if p.grad is not None else torch.zeros_like(p)).clone()
                 for k, p in module.named_parameters()}
        numbers_used = counter.numbers
    finally:
        counter.restore()
    if comm is not None:  # parameter gradients summed over ranks, as grad_sync does
        for g in grads.values():
            comm.all_reduce(g, op="sum")
    errors = {"out": rel_error(out.detach(), ref["out"][nid]),
              "x": rel_error(x.grad, ref["x"][nid])}
    for k, g in grads.items():
        errors[f"param:{k}"] = rel_error(g, ref["params"][k])
    check = 2 if forward is performer_attention_forward else 0
    return {"errors": errors, "all_reduced": numbers_used,
            "expected_all_reduced": 0 if comm is None else 2 * CASES[name][2] + check}


def refusals(graph, nid: Tensor, rank: int) -> dict:
    """A batch of two graphs (a ``batch`` vector with a 1 on the last rank, and a dense x of
    batch size 2) is refused on every rank with a message naming it."""
    out: dict[str, Any] = {}
    module = build("sgformer")
    x = torch.zeros(len(nid), IN, dtype=torch.float64)
    batch = torch.zeros(len(nid), dtype=torch.long)
    if rank == graph.world_size - 1 and len(nid):
        batch[-1] = 1
    for key, call in (
            ("batch_vector", lambda: sgformer_attention_forward(module, x, graph, batch=batch)),
            ("dense_batch", lambda: sgformer_attention_forward(
                module, torch.zeros(2, len(nid), IN, dtype=torch.float64), graph)),
            ("rows", lambda: polynormer_attention_forward(
                build("polynormer"), torch.zeros(len(nid) + 1, IN, dtype=torch.float64),
                graph))):
        try:
            call()
            out[key] = None
        except ValueError as e:
            out[key] = str(e)
    # A Performer projection matrix redrawn on the last rank only.
    perf = build("performer")
    if rank == graph.world_size - 1:
        torch.manual_seed(99)
        perf.redraw_projection_matrix()
    try:
        performer_attention_forward(perf, x, graph)
        out["performer_redrawn"] = None
    except RuntimeError as e:
        out["performer_redrawn"] = str(e)
    # A batch of zeros (one graph) is accepted.
    ok = sgformer_attention_forward(module, x, graph, batch=torch.zeros_like(batch))
    out["zeros_batch_rows"] = int(ok.shape[0])
    return out


# ------------------------------------------------------------------------ model level
def _polynormer(global_: bool, **kw) -> Polynormer:
    m = Polynormer(IN, 4, 3, local_layers=2, global_layers=2, in_dropout=0.0,
                   dropout=0.0, global_dropout=0.0, **kw)
    m._global = global_
    return m


def sgformer_forward(model: SGFormer, x: Tensor, graph, batch: Optional[Tensor]) -> Tensor:
    """PyG's ``SGFormer.forward`` over ``graph``, its ``SGModule`` given pyg_sar's forward
    (``registry.MODULE_FORWARDS``) and bound to ``graph``, as ``pyg_sar.convert`` and the
    converted model's call do."""
    from pyg_sar.nn.conversion.registry import MODULE_FORWARDS
    from pyg_sar.nn.module_forwards import bind_graph, convert_module_forwards
    assert type(model) is SGFormer  # PyG's class: convert leaves it (no replaced forward)
    convert_module_forwards(model, MODULE_FORWARDS)
    bind_graph(model, graph)
    try:
        return model(x, graph, batch)
    finally:
        bind_graph(model, None)


# name -> (model factory, distributed forward, submodules that pyg_sar.convert converts,
# training mode?). No dropout (its masks are per rank); train mode: batch norms over all rows.
MODELS: dict[str, tuple[Callable[[], torch.nn.Module], Callable, tuple[str, ...], bool]] = {
    "sgmodule": (lambda: SGModule(IN, 8, num_layers=2, num_heads=2, dropout=0.0),
                 sgmodule_forward, (), True),
    "sgformer": (lambda: SGFormer(IN, 8, 3, trans_num_heads=2, trans_dropout=0.0,
                                  gnn_num_layers=2, gnn_dropout=0.0),
                 sgformer_forward, ("graph_conv.convs", "graph_conv.bns"), True),
    "sgformer_cat_eval": (lambda: SGFormer(IN, 8, 3, trans_dropout=0.0, gnn_num_layers=2,
                                           gnn_dropout=0.0, aggregate="cat"),
                          sgformer_forward, ("graph_conv.convs", "graph_conv.bns"), False),
    "polynormer_global": (lambda: _polynormer(True), polynormer_forward,
                          ("local_convs", "post_bns"), True),
    "polynormer_global_gat_preln": (lambda: _polynormer(True, local_attn=True, pre_ln=True,
                                                        qk_shared=True),
                                    polynormer_forward, ("local_convs", "post_bns"), True),
    "polynormer_local": (lambda: _polynormer(False), polynormer_forward,
                         ("local_convs", "post_bns"), True),
}


def build_model(name: str, convert: bool) -> torch.nn.Module:
    torch.manual_seed(5)
    with default_dtype(torch.float64):
        model = MODELS[name][0]().double().train(MODELS[name][3])
    if convert:
        import pyg_sar
        cfg = pyg_sar.SARConfig(sync_gradients=False, broadcast_parameters=False,
                                check_parameters_every=0, check_loss=False)
        for sub in MODELS[name][2]:
            pyg_sar.convert(model.get_submodule(sub), cfg)
    return model


def run_model_case(name: str, data: Data, graph, nid: Tensor, comm) -> dict:
    """A model's forward (``batch`` all zeros) vs PyG's on the whole graph: output rows,
    input gradient rows, every parameter gradient summed over ranks."""
    model = build_model(name, convert=False)
    x = data.x.clone().requires_grad_()
    zeros = torch.zeros(NUM_NODES, dtype=torch.long)
    with default_dtype(torch.float64):
        ref = (model(x, zeros) if name == "sgmodule" else model(x, data.edge_index, zeros))
    c = torch.randn(ref.shape, generator=torch.Generator().manual_seed(12),
                    dtype=torch.float64)
    (ref * c).sum().backward()
    ref_grads = {k: p.grad for k, p in model.named_parameters()}

    model = build_model(name, convert=True)
    xl = data.x[nid].clone().requires_grad_()
    batch = torch.zeros(len(nid), dtype=torch.long)
    with default_dtype(torch.float64):
        out = MODELS[name][1](model, xl, graph, batch)
    (out * c[nid]).sum().backward()
    grads = {k: (p.grad if p.grad is not None else torch.zeros_like(p)).clone()
             for k, p in model.named_parameters()}
    if comm is not None:
        for g in grads.values():
            comm.all_reduce(g, op="sum")
    errors = {"out": rel_error(out.detach(), ref.detach()[nid]),
              "x": rel_error(xl.grad, x.grad[nid])}
    missing = sorted(set(ref_grads) ^ set(grads))
    if missing:
        raise AssertionError(f"parameter names differ after convert: {missing}")
    # A gradient that is zero in exact arithmetic (a bias before a training-mode batch norm:
    # the norm removes any shift) is rounding noise on both sides: it is compared against the
    # largest parameter gradient of the model instead of its own.
    top = max(float(g.abs().max()) for g in ref_grads.values() if g is not None)
    for k, g in grads.items():
        rg = ref_grads[k] if ref_grads[k] is not None else torch.zeros_like(g)
        if float(rg.abs().max()) < 1e-12 * top:
            errors[f"param(zero):{k}"] = float((g - rg).abs().max()) / top
        else:
            errors[f"param:{k}"] = rel_error(g, rg)
    return {"errors": errors}


def edgeless_graph(ctx, offsets: list[int]):
    """A DistGraph without edges over the given node ranges (one may be empty): linear
    attention reads no edge, only the rows and the communicator."""
    from pyg_sar.graph import Block, DistGraph
    n = offsets[ctx.rank + 1] - offsets[ctx.rank]
    empty = torch.zeros(0, dtype=torch.long)
    blocks = [Block(s, torch.zeros(n + 1, dtype=torch.long), empty,
                    n if s == ctx.rank else 0, 0, None) for s in range(ctx.world_size)]
    return DistGraph(ctx.rank, ctx.world_size, offsets, blocks,
                     [empty] * ctx.world_size, torch.zeros(n, dtype=torch.long), context=ctx)


def ranks(ctx, parts: str, variants: list[str], models: list[str],
          convert: Optional[dict] = None) -> dict:
    """Rank side of the P = 3 launch (``convert``: kwargs of :func:`convert_ranks`, whose
    results come back under ``"convert"``)."""
    import pyg_sar
    part = pyg_sar.load_partition(parts, ctx.rank)
    graph, nid = part.graph, part.node_ids
    data = make_data()
    comm = ctx.comm if ctx.world_size > 1 else None
    res: dict[str, Any] = {"rows": int(len(nid))}
    for v in variants:
        try:
            res[v] = run_case(v, data, graph, nid, comm)
        except Exception as e:  # noqa: BLE001  (reported per case, the launch goes on)
            res[v] = {"error": f"{type(e).__name__}: {e}"}
    for name in models:
        try:
            res[f"model/{name}"] = run_model_case(name, data, graph, nid, comm)
        except Exception as e:  # noqa: BLE001
            res[f"model/{name}"] = {"error": f"{type(e).__name__}: {e}"}
    res["refusals"] = refusals(graph, nid, ctx.rank)
    # The last rank without rows (it still joins every all-reduce).
    offsets = [0, 30] + [NUM_NODES] * (ctx.world_size - 1)
    empty = edgeless_graph(ctx, offsets)
    rows = torch.arange(offsets[ctx.rank], offsets[ctx.rank + 1])
    for name in CASES:
        try:
            res[f"empty_rank/{name}"] = run_case(name, data, empty, rows, comm)
        except Exception as e:  # noqa: BLE001
            res[f"empty_rank/{name}"] = {"error": f"{type(e).__name__}: {e}"}
    if convert is not None:
        res["convert"] = convert_ranks(ctx, **convert)
    return res


# ------------------------------------------------------------------ pyg_sar.convert(model)
class Composed(torch.nn.Module):
    """A user model composing PyG's global-attention modules, each called through its own
    forward (they find the DistGraph bound by the converted model's pre-hook)."""

    def __init__(self) -> None:
        super().__init__()
        from torch_geometric.nn import GCNConv
        from torch_geometric.nn.attention.performer import PerformerProjection
        self.conv = GCNConv(IN, 8)
        self.sg = SGModule(8, 8, num_layers=1, num_heads=2, dropout=0.0)
        self.sga = SGFormerAttention(8, heads=2, head_channels=4)
        self.poly = PolynormerAttention(8, heads=2, head_channels=4)
        self.perf = PerformerAttention(8, heads=2, head_channels=4)
        self.proj = PerformerProjection(4)
        self.lin = torch.nn.Linear(8, 3)

    def forward(self, x: Tensor, edge_index, batch: Optional[Tensor]) -> Tensor:
        h = self.conv(x, edge_index).relu()
        h = self.sg(h, batch)
        h = h + self.sga(h[None])[0].repeat(1, 2)
        h = h + self.poly(h[None])[0]
        h = h + self.perf(h[None], torch.ones(1, h.shape[0], dtype=torch.bool))[0]
        t = h.reshape(1, h.shape[0], 2, 4).permute(0, 2, 1, 3)
        h = h + self.proj(t, t.tanh(), t).permute(0, 2, 1, 3).reshape(h.shape)
        return torch.log_softmax(self.lin(h), dim=-1)


# name -> (model factory, training mode?, batch given as zeros (else None)). No dropout: its
# masks are drawn per rank.
CONVERT_MODELS: dict[str, tuple[Callable[[], torch.nn.Module], bool, bool]] = {
    "sgformer": (lambda: SGFormer(IN, 8, 3, trans_num_heads=2, trans_dropout=0.0,
                                  gnn_num_layers=2, gnn_dropout=0.0), True, True),
    "sgformer_cat_eval": (lambda: SGFormer(IN, 8, 3, trans_dropout=0.0, gnn_num_layers=1,
                                           gnn_dropout=0.0, aggregate="cat"), False, False),
    "polynormer_global": (lambda: _polynormer(True), True, True),
    "polynormer_global_gat_preln": (lambda: _polynormer(True, local_attn=True, pre_ln=True,
                                                        qk_shared=True), True, False),
    "polynormer_local": (lambda: _polynormer(False), True, True),
    "composed": (Composed, True, True),
}
# (model, mode): the mode changes only the local convs (GCNConv, GATConv); the global
# attention all-reduces its sums alike in every mode.
CONVERT_CASES = ([(name, "sar") for name in CONVERT_MODELS]
                 + [(name, mode) for name in ("sgformer", "polynormer_global_gat_preln")
                    for mode in ("sa", "halo")])


def convert_labels() -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(21)
    return (torch.randint(0, 3, (NUM_NODES,), generator=g),
            torch.rand(NUM_NODES, generator=g) < 0.7)


def build_convert_model(name: str) -> torch.nn.Module:
    torch.manual_seed(9)
    with default_dtype(torch.float64):
        return CONVERT_MODELS[name][0]().double().train(CONVERT_MODELS[name][1])


def run_convert_case(name: str, mode: str, data: Data, graph, nid: Tensor) -> dict:
    """``pyg_sar.convert(model, SARConfig(mode=mode))`` trained one step with pyg_sar's
    global ``nll_loss`` (grad_sync sums the parameter gradients) vs PyG's model on the whole
    graph with ``F.nll_loss``: output rows, loss, input gradient rows, every parameter
    gradient."""
    import copy

    import torch.nn.functional as F

    import pyg_sar
    from pyg_sar.nn import functional as sarF
    y, train = convert_labels()
    ref = build_convert_model(name)
    dist = pyg_sar.convert(copy.deepcopy(ref), pyg_sar.SARConfig(mode=mode))
    zeros = CONVERT_MODELS[name][2]
    x = data.x.clone().requires_grad_()
    xl = data.x[nid].clone().requires_grad_()
    with default_dtype(torch.float64):
        out_ref = ref(x, data.edge_index, torch.zeros(NUM_NODES, dtype=torch.long))
        loss_ref = F.nll_loss(out_ref[train], y[train])
        loss_ref.backward()
        out = dist(xl, graph, torch.zeros(len(nid), dtype=torch.long) if zeros else None)
        loss = sarF.nll_loss(out, y[nid], train[nid])
        loss.backward()
    errors = {"out": rel_error(out.detach(), out_ref.detach()[nid]),
              "loss": rel_error(loss.detach().reshape(1), loss_ref.detach().reshape(1)),
              "x": rel_error(xl.grad, x.grad[nid])}
    ref_grads = dict(ref.named_parameters())
    top = max(float(p.grad.abs().max()) for p in ref_grads.values() if p.grad is not None)
    count = 0
    for k, p in dist.named_parameters():
        rg = ref_grads[k].grad
        g = p.grad if p.grad is not None else torch.zeros_like(p)
        rg = rg if rg is not None else torch.zeros_like(p)
        count += 1
        if float(rg.abs().max()) < 1e-12 * top:  # zero in exact arithmetic: rounding noise
            errors[f"param(zero):{k}"] = float((g - rg).abs().max()) / top
        else:
            errors[f"param:{k}"] = rel_error(g, rg)
    # class name -> the modules defining the classes of that name in the converted model
    classes: dict[str, list[str]] = {}
    for m in dist.modules():
        if type(m).__name__ in ATTENTION_CLASSES:
            modules = classes.setdefault(type(m).__name__, [])
            if type(m).__module__ not in modules:
                modules.append(type(m).__module__)
    return {"errors": errors, "params": count, "classes": classes}


# The global-attention classes and whether convert gives them pyg_sar's forward (True) or
# leaves PyG's (False: SGFormer's forward calls its converted SGModule).
ATTENTION_CLASSES = {"SGFormerAttention": True, "PolynormerAttention": True,
                     "PerformerAttention": True, "PerformerProjection": True,
                     "SGModule": True, "Polynormer": True, "SGFormer": False}


def convert_refusals(data: Data, graph, nid: Tensor, rank: int) -> dict:
    """A converted SGFormer / Polynormer called with a batch of two graphs (a 1 on the last
    rank only) raises on every rank; without a DistGraph in a run of several ranks, too."""
    import pyg_sar
    out: dict[str, Any] = {}
    batch = torch.zeros(len(nid), dtype=torch.long)
    if rank == graph.world_size - 1 and len(nid):
        batch[-1] = 1
    for name in ("sgformer", "polynormer_global"):
        model = pyg_sar.convert(build_convert_model(name), pyg_sar.SARConfig(check_loss=False))
        try:
            with default_dtype(torch.float64):
                model(data.x[nid], graph, batch)
            out[f"batch/{name}"] = None
        except ValueError as e:
            out[f"batch/{name}"] = str(e)
        try:
            with default_dtype(torch.float64):
                model(data.x, data.edge_index, torch.zeros(NUM_NODES, dtype=torch.long))
            out[f"no_graph/{name}"] = None
        except RuntimeError as e:
            out[f"no_graph/{name}"] = str(e)
    return out


def convert_ranks(ctx, parts: str, cases: list[tuple[str, str]]) -> dict:
    """The converted-model ``cases`` ((model, mode) pairs) on this rank (P = 3 launch, or
    ``ctx=None``: P = 1 in process)."""
    import pyg_sar
    part = pyg_sar.load_partition(parts, ctx.rank if ctx is not None else 0)
    data = make_data()
    res: dict[str, Any] = {}
    for name, mode in cases:
        try:
            res[f"{name}/{mode}"] = run_convert_case(name, mode, data, part.graph,
                                                     part.node_ids)
        except Exception as e:  # noqa: BLE001  (reported per case, the launch goes on)
            res[f"{name}/{mode}"] = {"error": f"{type(e).__name__}: {e}"}
    res["refusals"] = convert_refusals(data, part.graph, part.node_ids,
                                       ctx.rank if ctx is not None else 0)
    return res
