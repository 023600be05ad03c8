"""Rank side of tests/api/test_losses.py, test_grad_sync.py and test_mistakes_training.py.

Each target runs many cases in one launch and compares with single-process PyG on the whole
graph (the oracle): loss values, gradients after the automatic synchronisation, training
curves, and the errors raised by the common mistakes.
"""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn import GraphSAGE

import pyg_sar
import pyg_sar.nn.functional as SF
from pyg_sar.testing import error_of
from tests.closeness import max_abs_diff, rel_error

IN, HIDDEN, CLASSES = 5, 8, 3


def make_graph(num_nodes: int = 60, num_edges: int = 300, seed: int = 0) -> Data:
    g = torch.Generator().manual_seed(seed)
    ei = torch.unique(torch.randint(0, num_nodes, (2, num_edges), generator=g), dim=1)
    return Data(x=torch.randn(num_nodes, IN, generator=g, dtype=torch.float64), edge_index=ei,
                y=torch.randint(0, CLASSES, (num_nodes,), generator=g),
                train_mask=torch.rand(num_nodes, generator=g) < 0.5,
                val_mask=torch.rand(num_nodes, generator=g) < 0.3,
                num_nodes=num_nodes)


def make_model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return GraphSAGE(IN, HIDDEN, num_layers=2, out_channels=CLASSES).double()


class _Setup:
    """The whole graph, this rank's partition, a PyG reference and its converted copy."""

    def __init__(self, ctx, parts: str, config: pyg_sar.SARConfig | None = None,
                 model_seed: int = 0) -> None:
        self.ctx = ctx
        self.data = make_graph()
        self.part = pyg_sar.load_partition(parts, ctx.rank)
        self.nid = self.part.node_ids
        self.ref = make_model(model_seed)
        self.model = pyg_sar.convert(copy.deepcopy(self.ref), config)

    def outputs(self):
        return (self.ref(self.data.x, self.data.edge_index),
                self.model(self.part.x.double(), self.part.graph))


def grad_error(ref: torch.nn.Module, model: torch.nn.Module) -> float:
    """Largest difference of parameter gradients, relative to the largest reference entry."""
    pairs = list(zip(ref.parameters(), model.parameters(), strict=True))
    scale = max(float(p.grad.abs().max()) for p, _ in pairs if p.grad is not None)
    err = 0.0
    for p, q in pairs:
        if (p.grad is None) != (q.grad is None):
            return float("inf")
        if p.grad is not None:
            err = max(err, max_abs_diff(q.grad, p.grad) / scale)
    return err


def param_error(ref: torch.nn.Module, model: torch.nn.Module) -> float:
    return max(rel_error(q, p) for p, q in zip(ref.parameters(), model.parameters(), strict=True))


def _zero(*models: torch.nn.Module) -> None:
    for m in models:
        m.zero_grad(set_to_none=True)


# ---- losses -----------------------------------------------------------------------------
def _loss_cases(data, part, nid):
    """name -> (reference loss of the whole output, pyg_sar loss of the local output)."""
    m_all, m = data.train_mask, part.train_mask
    y_all, y = data.y, part.y
    gen = torch.Generator().manual_seed(5)
    n = data.num_nodes
    soft = torch.softmax(torch.randn(n, CLASSES, generator=gen, dtype=torch.float64), -1)
    reg = torch.randn(n, CLASSES, generator=gen, dtype=torch.float64)
    onehot = F.one_hot(y_all, CLASSES).double()
    elem_w = torch.rand(n, CLASSES, generator=gen, dtype=torch.float64)
    cls_w = torch.tensor([0.5, 2.0, 1.25], dtype=torch.float64)
    pos_w = torch.tensor([1.5, 0.5, 3.0], dtype=torch.float64)
    y_ign = y_all.clone()
    y_ign[::7] = -1
    m_idx = m.nonzero().view(-1)
    cases = {
        "cross_entropy": (lambda o: F.cross_entropy(o[m_all], y_all[m_all]),
                          lambda o: SF.cross_entropy(o, y, m)),
        "cross_entropy_premasked": (lambda o: F.cross_entropy(o[m_all], y_all[m_all]),
                                    lambda o: SF.cross_entropy(o[m], y[m])),
        "cross_entropy_index_mask": (lambda o: F.cross_entropy(o[m_all], y_all[m_all]),
                                     lambda o: SF.cross_entropy(o, y, m_idx)),
        "cross_entropy_weight_ignore_smoothing": (
            lambda o: F.cross_entropy(o[m_all], y_ign[m_all], weight=cls_w, ignore_index=-1,
                                      label_smoothing=0.1),
            lambda o: SF.cross_entropy(o, y_ign[nid], m, weight=cls_w, ignore_index=-1,
                                       label_smoothing=0.1)),
        "cross_entropy_sum": (lambda o: F.cross_entropy(o[m_all], y_all[m_all], reduction="sum"),
                              lambda o: SF.cross_entropy(o, y, m, reduction="sum")),
        "cross_entropy_probabilities": (lambda o: F.cross_entropy(o[m_all], soft[m_all]),
                                        lambda o: SF.cross_entropy(o, soft[nid], m)),
        "nll_loss": (lambda o: F.nll_loss(o.log_softmax(-1)[m_all], y_all[m_all]),
                     lambda o: SF.nll_loss(o.log_softmax(-1)[m], y[m])),
        "nll_loss_weight": (lambda o: F.nll_loss(o.log_softmax(-1)[m_all], y_all[m_all],
                                                 weight=cls_w),
                            lambda o: SF.nll_loss(o.log_softmax(-1), y, m, weight=cls_w)),
        "binary_cross_entropy": (
            lambda o: F.binary_cross_entropy(o.sigmoid()[m_all], onehot[m_all],
                                             weight=elem_w[m_all]),
            lambda o: SF.binary_cross_entropy(o.sigmoid(), onehot[nid], m,
                                              weight=elem_w[nid])),
        "binary_cross_entropy_with_logits": (
            lambda o: F.binary_cross_entropy_with_logits(o[m_all], onehot[m_all],
                                                         pos_weight=pos_w),
            lambda o: SF.binary_cross_entropy_with_logits(o[m], onehot[nid][m],
                                                          pos_weight=pos_w)),
        "mse_loss": (lambda o: F.mse_loss(o[m_all], reg[m_all]),
                     lambda o: SF.mse_loss(o, reg[nid], m)),
        "l1_loss": (lambda o: F.l1_loss(o[m_all], reg[m_all]),
                    lambda o: SF.l1_loss(o, reg[nid], m)),
        "l1_loss_sum": (lambda o: F.l1_loss(o[m_all], reg[m_all], reduction="sum"),
                        lambda o: SF.l1_loss(o, reg[nid], m, reduction="sum")),
        "kl_div_batchmean": (
            lambda o: F.kl_div(o.log_softmax(-1)[m_all], soft[m_all], reduction="batchmean"),
            lambda o: SF.kl_div(o.log_softmax(-1), soft[nid], m, reduction="batchmean")),
        "kl_div_mean": (lambda o: F.kl_div(o.log_softmax(-1), soft, reduction="mean"),
                        lambda o: SF.kl_div(o.log_softmax(-1), soft[nid], reduction="mean")),
        "kl_div_sum_log_target": (
            lambda o: F.kl_div(o.log_softmax(-1), soft.log(), reduction="sum", log_target=True),
            lambda o: SF.kl_div(o.log_softmax(-1), soft[nid].log(), reduction="sum",
                                log_target=True)),
        "global_mean_smooth_l1": (
            lambda o: F.smooth_l1_loss(o[m_all], reg[m_all]),
            lambda o: SF.global_mean(F.smooth_l1_loss(o, reg[nid], reduction="none"), m)),
        "global_loss_custom": (
            lambda o: (o[m_all] * reg[m_all]).sum() / int(m_all.sum()),
            lambda o: SF.global_loss((o[m] * reg[nid][m]).sum()
                                     / float(pyg_sar.global_sum(m.sum())))),
    }
    return cases


def losses(ctx, parts: str) -> dict:
    """Every global loss: value (equal on every rank) and synchronised gradients against PyG
    on the whole graph; accuracy; the empty-mask error; ``reduction="none"``."""
    s = _Setup(ctx, parts)
    out: dict = {}
    for name, (ref_loss, dist_loss) in _loss_cases(s.data, s.part, s.nid).items():
        _zero(s.ref, s.model)
        out_ref, out_loc = s.outputs()
        want, got = ref_loss(out_ref), dist_loss(out_loc)
        want.backward()
        got.backward()
        values = ctx.comm.allgather_object(float(got))
        out[name] = {"value": abs(float(got) - float(want)) / max(abs(float(want)), 1e-30),
                     "same_on_ranks": len(set(values)) == 1,
                     "grad": grad_error(s.ref, s.model)}
    with torch.no_grad():
        out_ref, out_loc = s.outputs()
    m_all, m = s.data.train_mask, s.part.train_mask
    want = float((out_ref.argmax(-1) == s.data.y)[m_all].double().mean())
    out["accuracy"] = {
        "logits_mask": abs(SF.accuracy(out_loc, s.part.y, m) - want),
        "logits_premasked": abs(SF.accuracy(out_loc[m], s.part.y[m]) - want),
        "predictions": abs(SF.accuracy(out_loc.argmax(-1), s.part.y, m) - want),
        "val": abs(SF.accuracy(out_loc, s.part.y, s.part.val_mask) - float(
            (out_ref.argmax(-1) == s.data.y)[s.data.val_mask].double().mean())),
    }
    none = torch.zeros_like(m)
    out["empty_mask"] = error_of(lambda: SF.nll_loss(out_loc.log_softmax(-1), s.part.y, none))
    per_node = SF.cross_entropy(out_loc, s.part.y, m, reduction="none")
    out["none_is_local"] = rel_error(per_node, F.cross_entropy(out_loc[m], s.part.y[m],
                                                          reduction="none"))
    out["global_sum"] = float(pyg_sar.global_sum(m.sum())) - float(m_all.sum())
    pyg_sar.barrier()
    return out


# ---- gradient synchronisation ----------------------------------------------------------
def _train(model, forward, loss_of, steps: int, explicit: bool = False) -> list[float]:
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    curve = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_of(forward(model))
        loss.backward()
        if explicit:
            pyg_sar.all_reduce_gradients(model)
        opt.step()
        curve.append(float(loss))
    return curve


class Captured(torch.nn.Module):
    """A model called as ``model()`` that reads its graph from captured data (as PyG's
    tagcn.py and sgc.py do), with a linear encoder before the first message passing."""

    def __init__(self, seed: int, x, edge_index) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.encoder = torch.nn.Linear(IN, IN).double()
        self.gnn = GraphSAGE(IN, HIDDEN, num_layers=2, out_channels=CLASSES).double()
        self.data = (x, edge_index)

    def forward(self):
        x, edge_index = self.data
        return self.gnn(self.encoder(x).relu(), edge_index)


def _fingerprint_equal(ctx, model) -> bool:
    """Whether every rank holds bit-identical parameters."""
    mine = [p.detach().numpy().tobytes().hex() for p in model.parameters()]
    return all(e == mine for e in ctx.comm.allgather_object(mine))


def grad_sync(ctx, parts: str) -> dict:
    out: dict = {}
    data = make_graph()
    part = pyg_sar.load_partition(parts, ctx.rank)
    x = part.x.double()

    # Several optimizer steps with no all_reduce_gradients / broadcast_parameters call.
    for explicit in (False, True):
        ref = make_model()
        model = pyg_sar.convert(copy.deepcopy(ref))
        ref_curve = _train(ref, lambda net: net(data.x, data.edge_index),
                           lambda o: F.nll_loss(o.log_softmax(-1)[data.train_mask],
                                                data.y[data.train_mask]), 6)
        curve = _train(model, lambda net: net(x, part.graph),
                       lambda o: SF.nll_loss(o.log_softmax(-1), part.y, part.train_mask), 6,
                       explicit=explicit)
        out[f"training_explicit_{explicit}"] = {
            "curve": max(abs(a - b) / abs(b) for a, b in zip(curve, ref_curve)),
            "params": param_error(ref, model), "identical": _fingerprint_equal(ctx, model)}

    # One step's gradients; an explicit all_reduce_gradients after the automatic sync.
    s = _Setup(ctx, parts)
    out_ref, out_loc = s.outputs()
    F.cross_entropy(out_ref[s.data.train_mask], s.data.y[s.data.train_mask]).backward()
    SF.cross_entropy(out_loc, s.part.y, s.part.train_mask).backward()
    out["one_step"] = grad_error(s.ref, s.model)
    pyg_sar.all_reduce_gradients(s.model)
    pyg_sar.all_reduce_gradients(s.model.parameters())
    out["explicit_after_auto"] = grad_error(s.ref, s.model)

    # Gradient accumulation: two passes (train, then val nodes) without zeroing, then a
    # third after zero_grad(set_to_none=False).
    for name, zero_between in (("accumulate", False), ("accumulate_zeroed", True)):
        _zero(s.ref, s.model)
        for mask_all, mask in ((s.data.train_mask, s.part.train_mask),
                               (s.data.val_mask, s.part.val_mask)):
            if zero_between:
                s.ref.zero_grad(set_to_none=False)
                s.model.zero_grad(set_to_none=False)
            out_ref, out_loc = s.outputs()
            F.cross_entropy(out_ref[mask_all], s.data.y[mask_all]).backward()
            SF.cross_entropy(out_loc, s.part.y, mask).backward()
        out[name] = grad_error(s.ref, s.model)
        out[name + "_identical"] = all(
            e == [p.grad.numpy().tobytes().hex() for p in s.model.parameters()]
            for e in ctx.comm.allgather_object(
                [p.grad.numpy().tobytes().hex() for p in s.model.parameters()]))

    # torch.autograd.grad: this rank's share, and .grad untouched.
    before = [p.grad.clone() for p in s.model.parameters()]
    out_loc = s.model(s.part.x.double(), s.part.graph)
    loss = SF.cross_entropy(out_loc, s.part.y, s.part.train_mask)
    shares = torch.autograd.grad(loss, list(s.model.parameters()))
    summed = [pyg_sar.global_sum(g) for g in shares]
    out_ref = s.ref(s.data.x, s.data.edge_index)
    want = torch.autograd.grad(F.cross_entropy(out_ref[s.data.train_mask],
                                               s.data.y[s.data.train_mask]),
                               list(s.ref.parameters()))
    out["autograd_grad"] = {
        "grad_untouched": all(torch.equal(a, p.grad) for a, p in zip(before,
                                                                      s.model.parameters())),
        "shares_sum": max(rel_error(a, b) for a, b in zip(summed, want)),
        "shares_local": any(rel_error(a, b) > 1e-6 for a, b in zip(shares, want))}

    # sync_gradients=False: per-rank gradients; all_reduce_gradients sums them (old API).
    s = _Setup(ctx, parts, pyg_sar.SARConfig(sync_gradients=False))
    out_ref, out_loc = s.outputs()
    F.cross_entropy(out_ref[s.data.train_mask], s.data.y[s.data.train_mask]).backward()
    SF.cross_entropy(out_loc, s.part.y, s.part.train_mask).backward()
    out["off_local_differs"] = grad_error(s.ref, s.model)
    pyg_sar.all_reduce_gradients(s.model)
    out["off_explicit"] = grad_error(s.ref, s.model)
    # Turned on again by a later convert call.
    pyg_sar.convert(s.model)
    _zero(s.ref, s.model)
    out_ref, out_loc = s.outputs()
    F.cross_entropy(out_ref[s.data.train_mask], s.data.y[s.data.train_mask]).backward()
    SF.cross_entropy(out_loc, s.part.y, s.part.train_mask).backward()
    pyg_sar.all_reduce_gradients(s.model)
    out["reconvert_on"] = grad_error(s.ref, s.model)

    # A parameter that gets a gradient on rank 0 only, and one that gets none anywhere.
    s = _Setup(ctx, parts)
    s.model.extra = torch.nn.Parameter(torch.ones(2, dtype=torch.float64))
    s.model.unused = torch.nn.Parameter(torch.ones(2, dtype=torch.float64))
    out_loc = s.model(s.part.x.double(), s.part.graph)
    extra = (s.model.extra * 3.0).sum() if ctx.rank == 0 else torch.zeros((), dtype=torch.float64)
    loss = SF.cross_entropy(out_loc, s.part.y, s.part.train_mask) + SF.global_loss(extra)
    loss.backward()
    out["rank0_only_param"] = {"grad": s.model.extra.grad.tolist(),
                               "unused_is_none": s.model.unused.grad is None}

    # A deep copy of a converted model (its hook state is copied without the hooks, which it
    # registers again on its first forward) synchronises as the original does.
    s = _Setup(ctx, parts)
    s.model = copy.deepcopy(s.model)
    out_ref, out_loc = s.outputs()
    F.cross_entropy(out_ref[s.data.train_mask], s.data.y[s.data.train_mask]).backward()
    SF.cross_entropy(out_loc, s.part.y, s.part.train_mask).backward()
    out["deepcopy"] = grad_error(s.ref, s.model)

    # A model that finds its graph in captured data, not in its arguments: the layers
    # recognise the distributed forward (sync and checks), same training curve as PyG.
    ref = Captured(0, data.x, data.edge_index)
    model = pyg_sar.convert(Captured(0, x, part.graph))
    ref_curve = _train(ref, lambda net: net(), lambda o: F.nll_loss(
        o.log_softmax(-1)[data.train_mask], data.y[data.train_mask]), 4)
    curve = _train(model, lambda net: net(), lambda o: SF.nll_loss(
        o.log_softmax(-1), part.y, part.train_mask), 4)
    local = error_of(lambda: F.nll_loss(model()[part.train_mask],
                                         part.y[part.train_mask]).backward())
    out["captured_graph"] = {
        "curve": max(abs(a - b) / abs(b) for a, b in zip(curve, ref_curve)),
        "params": param_error(ref, model), "local_loss": local["type"]}
    # ... and with each rank's own initialisation: convert copies rank 0's parameters (the
    # job's context exists), so the first step is exact and no warning says otherwise.
    import warnings
    model = pyg_sar.convert(Captured(ctx.rank, x, part.graph))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model()
    out["captured_late_broadcast"] = {
        "warned": any("first step is not exact" in str(w.message) for w in caught),
        "identical": _fingerprint_equal(ctx, model)}

    # Bucket boundaries: a tiny bucket size cuts every parameter into its own bucket.
    from pyg_sar.nn import grad_sync as gs
    saved = gs.BUCKET_MB
    gs.BUCKET_MB = 1e-6
    try:
        s = _Setup(ctx, parts)
        out_ref, out_loc = s.outputs()
        F.cross_entropy(out_ref[s.data.train_mask], s.data.y[s.data.train_mask]).backward()
        SF.cross_entropy(out_loc, s.part.y, s.part.train_mask).backward()
        out["tiny_buckets"] = grad_error(s.ref, s.model)
    finally:
        gs.BUCKET_MB = saved
    return out


# ---- mistakes ---------------------------------------------------------------------------
def mistakes(ctx, parts: str) -> dict:
    out: dict = {}
    s = _Setup(ctx, parts)
    x, graph, y, m = s.part.x.double(), s.part.graph, s.part.y, s.part.train_mask

    # PyG's per-rank loss: loud, naming the fix; the model still trains correctly after.
    out["local_loss"] = error_of(
        lambda: F.cross_entropy(s.model(x, graph)[m], y[m]).backward())
    out["local_loss_grads_none"] = all(p.grad is None for p in s.model.parameters())
    out["local_loss_mse"] = error_of(
        lambda: F.mse_loss(s.model(x, graph), torch.zeros(x.shape[0], CLASSES,
                                                          dtype=torch.float64)).backward())
    out_ref, out_loc = s.outputs()
    F.cross_entropy(out_ref[s.data.train_mask], s.data.y[s.data.train_mask]).backward()
    SF.cross_entropy(out_loc, y, m).backward()
    out["after_error_grad"] = grad_error(s.ref, s.model)

    # The refused pass had already accumulated a gradient for a parameter used directly in
    # the loss: the next forward gives it back, and the next step synchronises as usual.
    s7 = _Setup(ctx, parts)
    s7.model.extra = torch.nn.Parameter(torch.ones(2, dtype=torch.float64))
    err = error_of(lambda: (F.cross_entropy(s7.model(x, graph)[m], y[m])
                             + (s7.model.extra * 2.0).sum()).backward())
    out_ref, out_loc = s7.outputs()
    extra_restored = s7.model.extra.grad is None
    F.cross_entropy(out_ref[s7.data.train_mask], s7.data.y[s7.data.train_mask]).backward()
    share = (s7.model.extra * 2.0).sum() if ctx.rank == 0 else torch.zeros((), dtype=torch.float64)
    (SF.cross_entropy(out_loc, y, m) + SF.global_loss(share)).backward()
    params = [q for n, q in s7.model.named_parameters() if n != "extra"]
    scale = max(float(q.grad.abs().max()) for q in s7.ref.parameters())
    out["after_aborted_pass"] = {
        "error": err["type"], "extra_restored": extra_restored,
        "extra": s7.model.extra.grad.tolist(),
        "grad": max(float((q.grad - r.grad).abs().max()) / scale
                    for q, r in zip(params, s7.ref.parameters(), strict=True))}

    # Opt-outs: global_loss for a reduction of one's own; check_loss=False.
    _zero(s.ref, s.model)
    weight = torch.randn(s.data.num_nodes, CLASSES, dtype=torch.float64,
                         generator=torch.Generator().manual_seed(2))
    out_ref, out_loc = s.outputs()
    (out_ref * weight).sum().backward()
    SF.global_loss((out_loc * weight[s.nid]).sum()).backward()
    out["global_loss_opt_out"] = grad_error(s.ref, s.model)
    s2 = _Setup(ctx, parts, pyg_sar.SARConfig(check_loss=False))
    out_ref, out_loc = s2.outputs()
    (out_ref * weight).sum().backward()
    (out_loc * weight[s2.nid]).sum().backward()
    out["check_loss_off"] = grad_error(s2.ref, s2.model)

    # Forgotten broadcast: every rank initialises its own parameters; convert (the job's
    # context exists) copies rank 0's, so gradients equal PyG's with rank 0's initialisation.
    ref = make_model(seed=0)
    plain = make_model(seed=ctx.rank)
    out["init_differs"] = not _fingerprint_equal(ctx, plain)
    model = pyg_sar.convert(plain)
    out["identical_after_convert"] = _fingerprint_equal(ctx, model)
    out_loc = model(x, graph)
    out["identical_after_forward"] = _fingerprint_equal(ctx, model)
    SF.cross_entropy(out_loc, y, m).backward()
    out_ref = ref(s.data.x, s.data.edge_index)
    F.cross_entropy(out_ref[s.data.train_mask], s.data.y[s.data.train_mask]).backward()
    out["forgotten_broadcast"] = grad_error(ref, model)
    pyg_sar.broadcast_parameters(model)  # an explicit broadcast as well is harmless
    out["explicit_broadcast"] = param_error(ref, model)

    # Drifting parameters: one rank changes a parameter; the next training forward raises.
    s3 = _Setup(ctx, parts)
    s3.model(x, graph)
    if ctx.rank == 1:
        with torch.no_grad():
            s3.model.convs[1].lin_l.weight[0, 0] += 1e-12
    out["drift"] = error_of(lambda: s3.model(x, graph))
    s3.model.eval()
    out["drift_eval_not_checked"] = error_of(lambda: s3.model(x, graph))

    # The interval: after the first 10 training forwards, every check_parameters_every-th.
    s4 = _Setup(ctx, parts, pyg_sar.SARConfig(check_parameters_every=15))
    for _ in range(10):
        s4.model(x, graph)
    if ctx.rank == 1:
        with torch.no_grad():
            s4.model.convs[0].lin_r.weight.mul_(1.5)
    calls = []
    for _ in range(11, 16):
        err = error_of(lambda: s4.model(x, graph))
        calls.append(err["type"])
    out["interval"] = calls
    out["interval_message"] = err["message"]

    # Gradients not synchronised (sync off and no all_reduce_gradients): the optimizer step
    # moves the ranks apart, and the next training forward says so.
    s5 = _Setup(ctx, parts, pyg_sar.SARConfig(sync_gradients=False))
    opt = torch.optim.SGD(s5.model.parameters(), lr=0.1)
    SF.cross_entropy(s5.model(x, graph), y, m).backward()
    opt.step()
    out["unsynchronised"] = error_of(lambda: s5.model(x, graph))

    # The check can be turned off.
    s6 = _Setup(ctx, parts, pyg_sar.SARConfig(check_parameters_every=0))
    s6.model(x, graph)
    if ctx.rank == 1:
        with torch.no_grad():
            s6.model.convs[1].lin_l.weight.add_(1.0)
    out["drift_check_off"] = error_of(lambda: s6.model(x, graph))
    return out


# ---- every entry point of a converted model ------------------------------------------------
class EncodeDecode(torch.nn.Module):
    """A link model used as PyG's link examples use theirs: through ``encode`` and a
    ``decode`` with a parameter of its own, never through ``forward``."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.gnn = GraphSAGE(IN, HIDDEN, num_layers=2).double()
        self.rel = torch.nn.Parameter(torch.randn(HIDDEN, dtype=torch.float64))

    def encode(self, x, edge_index):
        return self.gnn(x, edge_index)

    def decode(self, z):
        return (z * self.rel).sum(-1)


def _mlp(seed: int) -> torch.nn.Module:
    from torch_geometric.nn import MLP
    torch.manual_seed(seed)
    return MLP([IN, HIDDEN, CLASSES], norm="batch_norm", dropout=0.0).double()


def entry_points(ctx, parts: str) -> dict:
    """Gradient sync, broadcast and checks whichever method of a converted model runs; each
    rank initialises its model with its own seed (convert copies rank 0's)."""
    out: dict = {}
    data = make_graph()
    part = pyg_sar.load_partition(parts, ctx.rank)
    x, graph, nid = part.x.double(), part.graph, part.node_ids
    target = torch.randn(data.num_nodes, generator=torch.Generator().manual_seed(3),
                         dtype=torch.float64)

    # model.encode / model.decode, as PyG's GAE-style scripts call them.
    ref = EncodeDecode(0)
    model = pyg_sar.convert(EncodeDecode(ctx.rank))
    ref_curve = _train(ref, lambda net: net.decode(net.encode(data.x, data.edge_index)),
                       lambda o: F.mse_loss(o[data.train_mask], target[data.train_mask]), 5)
    curve = _train(model, lambda net: net.decode(net.encode(x, graph)),
                   lambda o: SF.mse_loss(o, target[nid], part.train_mask), 5)
    out["encode_decode"] = {
        "curve": max(abs(a - b) / abs(b) for a, b in zip(curve, ref_curve)),
        "params": param_error(ref, model), "identical": _fingerprint_equal(ctx, model)}

    # A converted model whose forward never receives a graph: an MLP on features.
    ref, model = _mlp(0), pyg_sar.convert(_mlp(ctx.rank))
    ref_curve = _train(ref, lambda net: net(data.x), lambda o: F.cross_entropy(
        o[data.train_mask], data.y[data.train_mask]), 5)
    curve = _train(model, lambda net: net(x), lambda o: SF.cross_entropy(
        o, part.y, part.train_mask), 5)
    out["mlp"] = {"curve": max(abs(a - b) / abs(b) for a, b in zip(curve, ref_curve)),
                  "params": param_error(ref, model), "identical": _fingerprint_equal(ctx, model)}

    # A per-rank loss through encode / through the MLP: refused on every rank, gradients
    # given back; the next step is exact again.
    model = pyg_sar.convert(EncodeDecode(0))
    m = part.train_mask
    out["encode_local_loss"] = error_of(lambda: F.mse_loss(
        model.decode(model.encode(x, graph))[m], target[nid][m]).backward())
    out["encode_local_loss_grads_none"] = all(p.grad is None for p in model.parameters())
    mlp = pyg_sar.convert(_mlp(0))
    out["mlp_local_loss"] = error_of(
        lambda: F.cross_entropy(mlp(x)[m], part.y[m]).backward())

    # Parameters that drift on one rank are refused at the next backward pass, whichever
    # method ran (no forward of the model at all here).
    model = pyg_sar.convert(EncodeDecode(0))
    SF.mse_loss(model.decode(model.encode(x, graph)), target[nid], m).backward()
    if ctx.rank == 1:
        with torch.no_grad():
            model.rel[0] += 1e-12
    out["encode_drift"] = error_of(lambda: SF.mse_loss(
        model.decode(model.encode(x, graph)), target[nid], m).backward())
    mlp = pyg_sar.convert(_mlp(0))
    if ctx.rank == 2:
        with torch.no_grad():
            mlp.lins[1].bias[0] += 1.0
    out["mlp_drift"] = error_of(lambda: SF.cross_entropy(mlp(x), part.y, m).backward())

    # The whole graph handed to the converted model instead of the rank's part: refused while
    # training (every rank would count it once); under no_grad PyG's output, as PyG computes.
    ref = EncodeDecode(0)
    model = pyg_sar.convert(EncodeDecode(0))
    out["whole_graph_training"] = error_of(lambda: model.encode(data.x, data.edge_index))
    with torch.no_grad():
        out["whole_graph_no_grad"] = rel_error(model.encode(data.x, data.edge_index),
                                          ref.encode(data.x, data.edge_index))

    # Global F1 (macro, micro) over every rank's rows against the whole graph's.
    with torch.no_grad():
        ref = make_model(0)
        want_out = ref(data.x, data.edge_index)
        got_out = pyg_sar.convert(make_model(0))(x, graph)
    mask_all, m = data.val_mask, part.val_mask
    out["f1"] = {avg: abs(SF.f1_score(got_out, part.y, m, average=avg)
                          - reference_f1(want_out.argmax(-1)[mask_all], data.y[mask_all], avg))
                 for avg in ("macro", "micro")}
    out["f1_micro_is_accuracy"] = abs(SF.f1_score(got_out, part.y, m, average="micro")
                                      - SF.accuracy(got_out, part.y, m))
    pyg_sar.barrier()
    return out


def reference_f1(pred: torch.Tensor, target: torch.Tensor, average: str) -> float:
    """scikit-learn's f1_score on one process (labels: the classes of target or pred)."""
    classes = torch.unique(torch.cat([pred, target]))
    tp = torch.stack([((pred == c) & (target == c)).sum() for c in classes]).double()
    fp = torch.stack([((pred == c) & (target != c)).sum() for c in classes]).double()
    fn = torch.stack([((pred != c) & (target == c)).sum() for c in classes]).double()
    if average == "micro":
        return float(2 * tp.sum() / (2 * tp.sum() + fp.sum() + fn.sum()))
    return float((2 * tp / (2 * tp + fp + fn)).mean())
