"""Rank-side cases of the compression tests: many cases per launch (float64 throughout).

* ``ratio1``: a compressor at ratio 1 gives bit-identical outputs, gradients and traffic to no
  compression, in every mode, on the linear (GCN, SAGE), generic (EdgeConv), fused attention
  (GAT, GATv2) and generic attention paths.
* ``sar_vs_sa``: under lossy codecs, SAR's gradients (rows fetched again in backward) equal SA's
  (rows kept from forward) exactly: the re-fetch received the bytes the forward fetch did.
* ``oracle``: under lossy codecs, outputs and every gradient equal plain PyG on the whole graph
  where each rank's view of a remote row is that row sent through the codec with its message's
  key (``pyg_sar.compression.roundtrip``, applied by a propagate pre-hook), layer by layer.
* ``fused_vs_generic``: the fused attention kernels equal PyG's own GAT message on the same
  decoded rows.
* ``bytes``: the traffic ledger equals the bytes handed to the communicator, and the bytes the
  codec's wire format predicts.
* ``eval`` and ``steps``: eval mode sends full rows; the random subset changes with the step.
* ``ef_steps``: three SGD steps with error feedback (``comp.step()`` between them): SAR equals
  SA bitwise in outputs, parameters and residuals, halo follows SAR, the residuals change the
  result and not the traffic.
* ``directions``: ``directions="rows"`` / ``"grads"`` compress only that direction's messages.
* ``stages_bytes``: the ledger follows :func:`~pyg_sar.compression.bit_stages` step by step.
* ``logits``: ``Compressor(logit_dtype=torch.bfloat16)`` on GAT (fused and generic): three SGD
  steps with SAR equal to SA bitwise, the ledger as the wire format predicts (logits at 2 bytes
  while lossy), ratio 1 bit-identical to no compression, and a schedule whose last stage is raw
  sending raw logits again.
* ``ef_resume``: a run checkpointed and resumed mid-way (residuals included) equals the straight
  run bitwise; a checkpoint with error feedback does not load into a model without it, and back.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch_geometric.data import Data
from torch_geometric.nn import EdgeConv, GATConv, GATv2Conv, GCNConv, SAGEConv

import pyg_sar
from pyg_sar.checkpoint import CheckpointError
from pyg_sar.compression import (
    BoundCodec,
    Compressor,
    Quantize,
    RandomSubset,
    Stages,
    Truncate,
    bit_stages,
    roundtrip,
)
from tests.closeness import max_abs_diff, rel_error

IN = 6
SEED = 5


def ranks_with(results: dict, launches: dict, group: str):
    """``(label, result)`` of ``group`` on every rank of every launch that ran it."""
    for world, (_, groups) in launches.items():
        if group in groups:
            for rank, res in enumerate(results[world]):
                yield f"P={world} rank {rank}", res[group]


def make_graph(num_nodes: int = 60, num_edges: int = 360, seed: int = 0) -> Data:
    """Directed random edges (duplicates removed), a few isolated nodes."""
    g = torch.Generator().manual_seed(seed)
    active = num_nodes - 4
    ei = torch.randint(0, active, (2, num_edges), generator=g)
    ei = torch.unique(ei, dim=1)
    return Data(x=torch.randn(num_nodes, IN, generator=g, dtype=torch.float64), edge_index=ei,
                num_nodes=num_nodes)


class Stack(torch.nn.Module):
    def __init__(self, conv1, conv2) -> None:
        super().__init__()
        self.conv1, self.conv2 = conv1, conv2

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


def _mlp(i: int, o: int) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(i, 8), torch.nn.Tanh(), torch.nn.Linear(8, o))


MODELS = {
    "gcn": lambda: Stack(GCNConv(IN, 8), GCNConv(8, 5)),
    "sage": lambda: Stack(SAGEConv(IN, 8), SAGEConv(8, 5)),
    "edgeconv": lambda: Stack(EdgeConv(_mlp(2 * IN, 8)), EdgeConv(_mlp(16, 5), aggr="mean")),
    "gat": lambda: Stack(GATConv(IN, 4, heads=2), GATConv(8, 5, heads=3, concat=False)),
    "gatv2": lambda: Stack(GATv2Conv(IN, 4, heads=2), GATv2Conv(8, 5, heads=2, concat=False)),
}

CODECS = {"truncate": Truncate, "subset": RandomSubset, "quantize": Quantize}
# Lossy settings: (codec, ratio); quantize at ratio 4 is 8 bits, at 16 it is 2 bits.
LOSSY = [("truncate", 2.0), ("subset", 2.5), ("quantize", 4.0), ("quantize", 16.0)]


def _compressor(codec: str, ratio, t: int = 3, **kwargs) -> Compressor:
    """``codec`` ("quantize+ef": with error feedback in both directions) at ``ratio`` (a
    number or a schedule), moved to step ``t``."""
    if codec.endswith("+ef"):
        codec, kwargs = codec[:-3], {**kwargs, "error_feedback": "both"}
    comp = Compressor(CODECS[codec](), ratio, seed=SEED, **kwargs)
    comp.step(t)
    return comp


def _weights(rows: int, cols: int) -> torch.Tensor:
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(3),
                       dtype=torch.float64)


def run(ctx, part, data, name: str, mode: str, compression=None, depth=None, kernels=True,
        project_first=True, train=True) -> dict:
    """One forward and backward of model ``name`` on this rank's part."""
    torch.manual_seed(7)
    model = MODELS[name]().double()
    pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode, pipeline_depth=depth,
                                             use_kernels=kernels, project_first=project_first,
                                             compression=compression, check_loss=False))
    model.train(train)
    nid = part.node_ids
    x = data.x[nid].clone().requires_grad_()
    ctx.comm.traffic.reset()
    out = model(x, part.graph)
    weight = _weights(data.num_nodes, out.shape[1])
    (out * weight[nid]).sum().backward()
    ledger = ctx.comm.traffic.as_dict()
    pyg_sar.all_reduce_gradients(model)
    return {"out": out.detach(), "grads": [x.grad] + [p.grad for p in model.parameters()],
            "ledger": ledger}


def _max_diff(a: dict, b: dict) -> float:
    pairs = [(a["out"], b["out"]), *zip(a["grads"], b["grads"])]
    return max(max_abs_diff(u, v) for u, v in pairs)


def _identical(a: dict, b: dict) -> bool:
    pairs = [(a["out"], b["out"]), *zip(a["grads"], b["grads"])]
    return all(torch.equal(u, v) for u, v in pairs)


# ------------------------------------------------------------------------------- ratio 1
def ratio1(ctx, part, data) -> dict:
    out = {}
    plans = [(m, mode, True) for m in MODELS for mode in ("sar", "sa", "halo")]
    plans += [("gat", "sar", False), ("gat", "sa", False), ("gatv2", "sar", False)]
    for name, mode, kernels in plans:
        base = run(ctx, part, data, name, mode, kernels=kernels, depth=2)
        for codec in [*CODECS, "quantize+ef", "subset+ef"]:
            got = run(ctx, part, data, name, mode, _compressor(codec, 1.0), kernels=kernels,
                      depth=2)
            out[f"{name}/{mode}/k{int(kernels)}/{codec}"] = {
                "identical": _identical(base, got), "ledger_equal": base["ledger"] == got[
                    "ledger"], "bytes": sum(v["sent"] for d in got["ledger"].values()
                                            for v in d.values())}
    return out


# ------------------------------------------------------------------------------ sar vs sa
def sar_vs_sa(ctx, part, data) -> dict:
    out = {}
    plans = [("gcn", True), ("sage", True), ("edgeconv", True), ("gat", True), ("gatv2", True),
             ("gat", False)]
    for name, kernels in plans:
        plain = run(ctx, part, data, name, "sar", kernels=kernels)
        for codec, ratio in LOSSY:
            sar = run(ctx, part, data, name, "sar", _compressor(codec, ratio), kernels=kernels)
            sa = run(ctx, part, data, name, "sa", _compressor(codec, ratio), kernels=kernels)
            out[f"{name}/k{int(kernels)}/{codec}{ratio:g}"] = {
                "max_abs_diff": _max_diff(sar, sa), "vs_uncompressed": _max_diff(sar, plain)}
    return out


# --------------------------------------------------------------------------------- oracle
class Views:
    """Which original rows each rank sends to each other rank, in message order."""

    def __init__(self, parts: str, world: int) -> None:
        all_parts = [pyg_sar.load_partition(parts, s) for s in range(world)]
        self.owned = [p.node_ids for p in all_parts]
        self.send = [[p.node_ids[p.graph.send_idx[r]] for r in range(world)] for p in all_parts]
        self.world = world

    def seen_by(self, r: int, h: torch.Tensor, bound: BoundCodec) -> torch.Tensor:
        """``h`` as rank ``r`` sees it: remote rows through the codec, keyed per message."""
        for s in range(self.world):
            rows = self.send[s][r]
            if s != r and rows.numel():
                h = h.index_put((rows,), roundtrip(h[rows], bound, 0, s, r))
        return h


def _dist_layer(conv, h, edge_index, views: Views, bound: BoundCodec) -> torch.Tensor:
    """Layer ``conv`` computed by every rank on its own view; rows assembled by owner."""
    out = None
    for r in range(views.world):
        def hook(module, inputs, r=r):
            edge_index, size, kwargs = inputs
            kwargs = dict(kwargs)
            x = kwargs["x"]
            src, dst = (x if isinstance(x, tuple) else (x, x))
            kwargs["x"] = (views.seen_by(r, src, bound), dst)
            return edge_index, size, kwargs
        handle = conv.register_propagate_forward_pre_hook(hook)
        try:
            mine = conv(h, edge_index)
        finally:
            handle.remove()
        rows = views.owned[r]
        if out is None:
            out = mine.new_zeros(mine.shape)
        out = out.index_put((rows,), mine[rows])
    return out


def oracle_case(part, data, views: Views, name: str, codec: str, ratio: float, t: int):
    torch.manual_seed(7)
    ref = MODELS[name]().double()
    x = data.x.clone().requires_grad_()
    bounds = [BoundCodec(CODECS[codec](), ratio, SEED, t, layer, 0) for layer in (0, 1)]
    return two_layer_oracle(part, data, ref, x, _dist_layer, views, bounds)


def two_layer_oracle(part, data, ref, x, layer, views: Views, wires) -> dict:
    """``ref``'s two convs through ``layer(conv, h, edge_index, views, wire)`` (``wires[i]``
    for conv ``i``), a ReLU between them, backward of the fixed output weighting: this rank's
    rows of the output and of ``x``'s gradient, and every parameter gradient."""
    h = layer(ref.conv1, x, data.edge_index, views, wires[0]).relu()
    out = layer(ref.conv2, h, data.edge_index, views, wires[1])
    (out * _weights(data.num_nodes, out.shape[1])).sum().backward()
    nid = part.node_ids
    return {"out": out.detach()[nid], "grads": [x.grad[nid]] + [p.grad for p in ref.parameters()]}


def oracle(ctx, part, data, parts: str) -> dict:
    views = Views(parts, ctx.world_size)
    out = {}
    for name in ("gcn", "sage", "edgeconv"):
        for codec, ratio in LOSSY:
            ref = oracle_case(part, data, views, name, codec, ratio, t=3)
            for mode in ("sar", "sa", "halo"):
                # project_first=False: SAGE then sends its input rows, as PyG's propagate does
                got = run(ctx, part, data, name, mode, _compressor(codec, ratio, t=3),
                          project_first=False, depth=1)
                errs = [rel_error(got["out"], ref["out"])]
                errs += [rel_error(a, b) for a, b in zip(got["grads"], ref["grads"])]
                plain = run(ctx, part, data, name, mode, project_first=False)
                out[f"{name}/{mode}/{codec}{ratio:g}"] = {
                    "max_rel": max(errs), "vs_uncompressed": _max_diff(got, plain)}
    return out


# ------------------------------------------------------------------------- fused attention
def fused_vs_generic(ctx, part, data) -> dict:
    out = {}
    for name in ("gat", "gatv2"):
        for codec, ratio in LOSSY:
            fused = run(ctx, part, data, name, "sar", _compressor(codec, ratio))
            generic = run(ctx, part, data, name, "sar", _compressor(codec, ratio), kernels=False)
            errs = [rel_error(fused["out"], generic["out"])]
            errs += [rel_error(a, b) for a, b in zip(fused["grads"], generic["grads"])]
            out[f"{name}/{codec}{ratio:g}"] = max(errs)
    return out


# ---------------------------------------------------------------------------------- bytes
class CountingComm:
    """Counts the bytes of every tensor handed to the communicator's sends."""

    def __init__(self, comm) -> None:
        self.comm, self.sent = comm, 0
        self._isend, self._a2a = comm.isend, comm.all_to_all_single

    def __enter__(self):
        def isend(tensor, dst, tag=0):
            self.sent += tensor.numel() * tensor.element_size()
            return self._isend(tensor, dst, tag)

        def a2a(output, input, output_split_sizes=None, input_split_sizes=None, **kw):
            row = input[0].numel() * input.element_size() if input.shape[0] else 0
            own = input_split_sizes[self.comm.rank] if input_split_sizes else 0
            self.sent += (input.shape[0] - own) * row
            return self._a2a(output, input, output_split_sizes, input_split_sizes, **kw)
        self.comm.isend, self.comm.all_to_all_single = isend, a2a
        return self

    def __exit__(self, *exc):
        del self.comm.isend, self.comm.all_to_all_single
        return False


def _ledger_total(ledger: dict) -> int:
    return sum(v["sent"] for d in ledger.values() for v in d.values())


def traffic_bytes(ctx, part, data) -> dict:
    """Ledger vs the communicator, and vs the codec's wire format (GCN: widths 8 then 5)."""
    out = {}
    g = part.graph
    rows_out, rows_in = sum(g.send_counts), sum(g.recv_counts)
    settings = [(None, 1.0), ("truncate", 4.0), ("subset", 3.0), ("quantize", 4.0),
                ("quantize", 16.0)]
    for mode in ("sar", "sa", "halo"):
        for codec, ratio in settings:
            run(ctx, part, data, "gcn", mode)  # warm the graph's caches (normalisation)
            comp = None if codec is None else _compressor(codec, ratio)
            with CountingComm(ctx.comm) as counting:
                got = run(ctx, part, data, "gcn", mode, comp)
            ledger = got["ledger"]
            expected = {}
            for layer, width in (("conv1", 8), ("conv2", 5)):
                row = (Truncate() if codec is None else CODECS[codec]()).wire_bytes(
                    1, (width,), torch.float64, 1.0 if codec is None else ratio)
                expected[layer] = {"rows": {"sent": rows_out * row, "recv": rows_in * row},
                                   "grads": {"sent": rows_in * row, "recv": rows_out * row}}
            out[f"{mode}/{codec}{ratio:g}"] = {
                "ledger": ledger, "expected": expected, "comm_sent": counting.sent,
                "ledger_sent": _ledger_total(ledger)}
    # The generic path re-fetches in SAR mode (direction "refetch"), not in SA mode.
    for mode in ("sar", "sa"):
        got = run(ctx, part, data, "edgeconv", mode, _compressor("truncate", 2.0))
        out[f"edgeconv/{mode}"] = {"ledger": got["ledger"]}
    return out


# ------------------------------------------------------------------------------ eval, steps
def eval_and_steps(ctx, part, data) -> dict:
    out = {}
    comp = _compressor("truncate", 4.0)
    plain = run(ctx, part, data, "gcn", "sar", train=False)
    got = run(ctx, part, data, "gcn", "sar", comp, train=False)
    out["eval_identical"] = _identical(plain, got)
    out["eval_calls"] = dict(comp._calls)
    forced = run(ctx, part, data, "gcn", "sar", _compressor("truncate", 4.0, in_eval=True),
                 train=False)
    out["in_eval_differs"] = _max_diff(forced, plain)
    runs = {t: run(ctx, part, data, "gcn", "sar", _compressor("subset", 3.0, t=t))
            for t in (1, 2)}
    again = run(ctx, part, data, "gcn", "sar", _compressor("subset", 3.0, t=1))
    out["same_step_identical"] = _identical(runs[1], again)
    out["next_step_differs"] = _max_diff(runs[1], runs[2])
    return out


# ------------------------------------------------------------------- error feedback, steps
def train(ctx, part, data, name: str, mode: str, comp=None, steps: int = 3, kernels=True,
          model=None, opt=None) -> list:
    """``steps`` SGD steps of model ``name`` (``comp.step()`` after each): per step the output,
    the parameters after the step, the ledger and the committed residuals."""
    if model is None:
        torch.manual_seed(7)
        model = MODELS[name]().double()
        pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode, use_kernels=kernels,
                                                 compression=comp, check_loss=False))
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    nid = part.node_ids
    x = data.x[nid]
    weight = None
    hist = []
    for _ in range(steps):
        ctx.comm.traffic.reset()
        opt.zero_grad()
        out = model(x, part.graph)
        weight = _weights(data.num_nodes, out.shape[1]) if weight is None else weight
        (out * weight[nid]).sum().backward()
        pyg_sar.all_reduce_gradients(model)
        opt.step()
        if comp is not None:
            comp.step()
        fb = getattr(comp, "feedback", None)
        hist.append({"out": out.detach(), "params": [p.detach().clone() for p in
                                                     model.parameters()],
                     "ledger": ctx.comm.traffic.as_dict(),
                     "res": {} if fb is None else {k: v.clone() for k, v in
                                                   fb.committed.items()}})
    return hist


def _step_diff(a: dict, b: dict) -> float:
    """Max relative difference of outputs, parameters and residuals, each against ``b``'s
    largest entry (inf if the residual keys differ)."""
    if set(a["res"]) != set(b["res"]):
        return float("inf")
    pairs = [(a["out"], b["out"]), *zip(a["params"], b["params"]),
             *((a["res"][k], b["res"][k]) for k in a["res"])]
    return max(rel_error(u, v) for u, v in pairs)


def _step_identical(a: dict, b: dict) -> bool:
    if set(a["res"]) != set(b["res"]):
        return False
    pairs = [(a["out"], b["out"]), *zip(a["params"], b["params"]),
             *((a["res"][k], b["res"][k]) for k in a["res"])]
    return all(torch.equal(u, v) for u, v in pairs)


def ef_steps(ctx, part, data) -> dict:
    out = {}
    plans = [("gcn", True), ("sage", True), ("gat", True), ("gat", False), ("gatv2", True)]
    for name, kernels in plans:
        for codec, ratio in (("quantize", 8.0), ("subset", 2.5)):
            runs = {mode: train(ctx, part, data, name, mode,
                                _compressor(codec + "+ef", ratio), kernels=kernels)
                    for mode in (("sar", "sa", "halo") if kernels else ("sar", "sa"))}
            noef = train(ctx, part, data, name, "sar", _compressor(codec, ratio),
                         kernels=kernels)
            sar = runs["sar"]
            case = {
                "sar_eq_sa": [_step_identical(a, b) for a, b in zip(sar, runs["sa"])],
                "residual_keys": [len(s["res"]) for s in sar],
                "residual_norm": [max((float(v.abs().max()) for v in s["res"].values()
                                       if v.numel()), default=0.0) for s in sar],
                "first_step_as_noef": torch.equal(sar[0]["out"], noef[0]["out"]),
                "vs_noef": max(max(float((u - v).abs().max()) for u, v in
                                   [(a["out"], b["out"]), *zip(a["params"], b["params"])])
                               for a, b in zip(sar[1:], noef[1:])),
                "ledger_as_noef": [a["ledger"] == b["ledger"] for a, b in zip(sar, noef)],
            }
            if "halo" in runs:
                halo = runs["halo"]
                case["halo_keys"] = [set(a["res"]) == set(b["res"]) for a, b in zip(sar, halo)]
                case["halo_diff"] = [_step_diff(a, b) for a, b in zip(sar, halo)]
            out[f"{name}/k{int(kernels)}/{codec}{ratio:g}"] = case
    return out


def directions(ctx, part, data) -> dict:
    """Ledgers of one step with ``directions`` none (uncompressed) / rows / grads / both."""
    out = {}
    for name in ("gcn", "gat"):
        got = {"none": run(ctx, part, data, name, "sar")["ledger"]}
        for d in ("rows", "grads", "both"):
            got[d] = run(ctx, part, data, name, "sar",
                         _compressor("quantize", 4.0, directions=d))["ledger"]
        out[name] = got
    # feedback of the compressed direction only: residuals of rows messages only, same ledger
    hist = train(ctx, part, data, "gcn", "sar",
                 _compressor("quantize", 4.0, directions="rows", error_feedback="rows"), steps=2)
    out["ef_rows"] = {"res_directions": sorted({k[5] for s in hist for k in s["res"]}),
                      "ledger_as_rows": hist[-1]["ledger"] == out["gcn"]["rows"]}
    return out


def stages_bytes(ctx, part, data) -> dict:
    """GCN (widths 8, 5) under Quantize + ``bit_stages(total_steps=10)``: the ledger at the
    first and last step of every stage, and the ledger the wire format predicts."""
    sched = bit_stages(total_steps=10)
    g = part.graph
    rows_out, rows_in = sum(g.send_counts), sum(g.recv_counts)
    out = {"stages": sched.stages, "steps": {}}  # results travel as JSON: str keys
    for t in sorted({0, *(u - 1 for _, u in sched.stages), *(u for _, u in sched.stages)}):
        ratio = sched(t)
        ledger = run(ctx, part, data, "gcn", "sar", _compressor("quantize", sched, t=t))[
            "ledger"]
        expected = {}
        for layer, width in (("conv1", 8), ("conv2", 5)):
            row = Quantize().wire_bytes(1, (width,), torch.float64, ratio)
            expected[layer] = {"rows": {"sent": rows_out * row, "recv": rows_in * row},
                               "grads": {"sent": rows_in * row, "recv": rows_out * row}}
        out["steps"][str(t)] = {"ratio": ratio, "ledger": ledger, "expected": expected}
    return out


def ef_resume(ctx, part, data, parts: str) -> dict:
    """4 SGD steps straight against 2 + checkpoint + fresh objects + load + 2 (SAGE, quantize
    8 bits and subset, error feedback both); then EF on/off checkpoints loaded the other way."""
    out = {}
    root = Path(parts) / "ef_resume"

    def fresh(comp):
        torch.manual_seed(7)
        model = MODELS["sage"]().double()
        pyg_sar.convert(model, pyg_sar.SARConfig(mode="sar", compression=comp,
                                                 check_loss=False))
        return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    for codec, ratio in (("quantize", 4.0), ("subset", 2.5)):
        straight = train(ctx, part, data, "sage", "sar", _compressor(codec + "+ef", ratio),
                         steps=4)
        comp = _compressor(codec + "+ef", ratio)
        model, opt = fresh(comp)
        first = train(ctx, part, data, "sage", "sar", comp, steps=2, model=model, opt=opt)
        path = root / f"{codec}"
        pyg_sar.save_checkpoint(path, model, opt, 2)  # returns once latest.json is written
        comp2 = _compressor(codec + "+ef", ratio, t=0)
        model2, opt2 = fresh(comp2)
        pyg_sar.load_checkpoint(path, model2, opt2)
        loaded_t = comp2.t
        rest = train(ctx, part, data, "sage", "sar", comp2, steps=2, model=model2, opt=opt2)
        out[f"{codec}{ratio:g}"] = {
            "straight_eq_resumed": [_step_identical(a, b) for a, b in
                                    zip(straight, first + rest)],
            "residual_keys": len(straight[-1]["res"]), "loaded_t": loaded_t,
            "comp_t": comp.t}
    refused = {}
    for saved_ef, loaded_ef in (("quantize+ef", "quantize"), ("quantize", "quantize+ef")):
        path = root / f"refuse-{saved_ef}"
        model, opt = fresh(_compressor(saved_ef, 4.0))
        pyg_sar.save_checkpoint(path, model, opt, 0)
        model2, _ = fresh(_compressor(loaded_ef, 4.0))
        try:
            pyg_sar.load_checkpoint(path, model2)
            refused[f"{saved_ef}->{loaded_ef}"] = None
        except CheckpointError as exc:
            refused[f"{saved_ef}->{loaded_ef}"] = str(exc)
    out["refused"] = refused
    return out


# ------------------------------------------------------------------------- logits as bf16
BF16 = torch.bfloat16
# (heads, channels a head) of the two GAT layers of MODELS["gat"]
GAT_LAYERS = {"conv1": (2, 4), "conv2": (3, 5)}


def _gat_ledger(part, codec: str, ratio: float, logit_bytes: int, kinds) -> dict:
    """The ledger ``sent`` bytes of one GAT step: the feature rows ``[H, C]`` through the
    codec, the ``H`` logits at ``logit_bytes`` a value, for the directions ``kinds``."""
    g = part.graph
    rows = {"rows": sum(g.send_counts), "refetch": sum(g.send_counts),
            "grads": sum(g.recv_counts)}
    out = {}
    for layer, (heads, ch) in GAT_LAYERS.items():
        row = CODECS[codec]().wire_bytes(1, (heads, ch), torch.float64, ratio)
        out[layer] = {k: rows[k] * (row + heads * logit_bytes) for k in kinds[layer]}
    return out


def _sent_of(ledger: dict) -> dict:
    return {layer: {k: v["sent"] for k, v in d.items()} for layer, d in ledger.items()}


def logits(ctx, part, data) -> dict:
    out = {}
    for kernels in (True, False):
        for codec, ratio in (("quantize", 16.0), ("truncate", 2.0)):
            runs = {mode: train(ctx, part, data, "gat", mode,
                                _compressor(codec, ratio, logit_dtype=BF16), kernels=kernels)
                    for mode in (("sar", "sa", "halo") if kernels else ("sar", "sa"))}
            raw = train(ctx, part, data, "gat", "sar", _compressor(codec, ratio),
                        kernels=kernels)
            sar = runs["sar"]
            kinds = {layer: sorted(d) for layer, d in sar[0]["ledger"].items()}
            out[f"k{int(kernels)}/{codec}{ratio:g}"] = {
                "sar_eq_sa": [_step_identical(a, b) for a, b in zip(sar, runs["sa"])],
                "vs_raw_logits": max(_step_diff(a, b) for a, b in zip(sar, raw)),
                "ledgers": [_sent_of(h["ledger"]) for h in sar],
                "ledgers_sa": [_sent_of(h["ledger"]) for h in runs["sa"]],
                "expected": _gat_ledger(part, codec, ratio, 2, kinds),
                "expected_raw_logits": _gat_ledger(part, codec, ratio, 8, kinds),
                "raw_logits_ledger": _sent_of(raw[0]["ledger"]),
                "halo_diff": [_step_diff(a, b) for a, b in zip(sar, runs.get("halo", []))],
                "halo_ledgers": [_sent_of(h["ledger"]) for h in runs.get("halo", [])]}
        plain = train(ctx, part, data, "gat", "sar", kernels=kernels)
        one = train(ctx, part, data, "gat", "sar", _compressor("quantize", 1.0, t=0,
                                                                logit_dtype=BF16),
                    kernels=kernels)
        # lossy (2 bits) for steps 0 and 1, raw from step 2 on
        staged = {mode: train(ctx, part, data, "gat", mode,
                              _compressor("quantize", Stages([(16.0, 2)], final=1.0), t=0,
                                          logit_dtype=BF16), kernels=kernels)
                  for mode in ("sar", "sa")}
        kinds = {layer: sorted(d) for layer, d in plain[0]["ledger"].items()}
        out[f"k{int(kernels)}/ratio1"] = {
            "identical": [_step_identical(a, b) for a, b in zip(plain, one)],
            "ledger_equal": [a["ledger"] == b["ledger"] for a, b in zip(plain, one)]}
        out[f"k{int(kernels)}/stages"] = {
            "sar_eq_sa": [_step_identical(a, b) for a, b in zip(staged["sar"], staged["sa"])],
            "ledgers": [_sent_of(h["ledger"]) for h in staged["sar"]],
            "expected_lossy": _gat_ledger(part, "quantize", 16.0, 2, kinds),
            "expected_raw": _gat_ledger(part, "quantize", 1.0, 8, kinds),
            "plain": _sent_of(plain[0]["ledger"])}
    return out


GROUPS = {
    "ratio1": lambda ctx, part, data, parts: ratio1(ctx, part, data),
    "sar_vs_sa": lambda ctx, part, data, parts: sar_vs_sa(ctx, part, data),
    "oracle": oracle,
    "fused_vs_generic": lambda ctx, part, data, parts: fused_vs_generic(ctx, part, data),
    "bytes": lambda ctx, part, data, parts: traffic_bytes(ctx, part, data),
    "eval": lambda ctx, part, data, parts: eval_and_steps(ctx, part, data),
    "ef_steps": lambda ctx, part, data, parts: ef_steps(ctx, part, data),
    "directions": lambda ctx, part, data, parts: directions(ctx, part, data),
    "stages_bytes": lambda ctx, part, data, parts: stages_bytes(ctx, part, data),
    "ef_resume": ef_resume,
    "logits": lambda ctx, part, data, parts: logits(ctx, part, data),
}


def suite(ctx, parts: str, groups: list) -> dict:
    """The case groups ``groups`` (keys of :data:`GROUPS`) of
    tests/compression/test_compression_ranks.py, in one launch."""
    data = make_graph()
    part = pyg_sar.load_partition(parts, ctx.rank)
    return {name: GROUPS[name](ctx, part, data, parts) for name in groups}
