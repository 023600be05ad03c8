"""Rank-side cases of the wire-dtype tests in tests/compression/test_wire.py (group
``wire_dtype`` of ``wire_cases.py``'s launch; P = 3).

* ``oracle``: with ``SARConfig(wire_dtype=torch.bfloat16)`` (alone or after a channel codec),
  outputs and every gradient of modes sar, sa and halo equal plain PyG on the whole graph where
  each rank's view of a remote row is that row rounded to bf16 (and through the codec), and the
  gradient it sends back is rounded to bf16 too (``roundtrip`` with a ``Transport``), layer by
  layer: GCN, SAGE, EdgeConv (float64 rows, so the oracle's own rounding is negligible) and
  GAT/GATv2 on the fused, generic and halo paths, with GAT's logits exact. SAR equals SA bit
  for bit; the distance from the uncompressed float64 result is of the order of bf16's
  rounding and not zero.
* ``bytes``: the traffic ledger equals the bytes handed to the communicator and the wire
  format: float32 rows cost exactly half, float64 rows a quarter (a float32 wire: half), GAT's
  logits their full width; Truncate at ratio 2 + bf16 a quarter of float32; Quantize is left
  alone (the same bytes and results as without a wire dtype); eval mode casts too.
"""
from __future__ import annotations

import torch

import pyg_sar
from pyg_sar.compression import BoundCodec, Compressor, Transport
from tests.closeness import rel_error
from tests.compression.rank_cases import (
    CODECS,
    MODELS,
    SEED,
    CountingComm,
    Views,
    _dist_layer,
    _identical,
    _ledger_total,
    _weights,
    two_layer_oracle,
)
from tests.compression.wire_cases import MODELS as WIRE_MODELS
from tests.compression.wire_cases import _oracle_layer

BF16 = torch.bfloat16
ATTENTION_MODELS = {name: WIRE_MODELS[name] for name in ("gat", "gatv2")}
ALL_MODELS = {**MODELS, **ATTENTION_MODELS}
# (codec, ratio) under the bf16 wire; None: the cast alone
SETTINGS = [(None, 1.0), ("truncate", 2.0), ("subset", 2.5)]


def _compressor(codec, ratio: float, t: int = 3):
    if codec is None:
        return None
    comp = Compressor(CODECS[codec](), ratio, seed=SEED)
    comp.step(t)
    return comp


def run(ctx, part, data, name: str, mode: str, wire_dtype=None, comp=None, kernels=True,
        dtype=torch.float64, train=True, project_first=False) -> dict:
    """One forward and backward of ``name`` on this rank's part (``project_first=False``:
    SAGE sends its input rows, as PyG's propagate reads them)."""
    torch.manual_seed(7)
    model = ALL_MODELS[name]().to(dtype)
    pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode, use_kernels=kernels,
                                             project_first=project_first, compression=comp,
                                             wire_dtype=wire_dtype, pipeline_depth=1,
                                             check_loss=False))
    model.train(train)
    nid = part.node_ids
    x = data.x[nid].to(dtype).clone().requires_grad_()
    ctx.comm.traffic.reset()
    with CountingComm(ctx.comm) as counting:
        out = model(x, part.graph)
        (out * _weights(data.num_nodes, out.shape[1])[nid].to(dtype)).sum().backward()
    ledger = ctx.comm.traffic.as_dict()
    pyg_sar.all_reduce_gradients(model)
    return {"out": out.detach(), "grads": [x.grad] + [p.grad for p in model.parameters()],
            "ledger": ledger, "comm_sent": counting.sent}


def _max_rel(a: dict, b: dict) -> float:
    pairs = [(a["out"], b["out"]), *zip(a["grads"], b["grads"])]
    return max(rel_error(u, v) for u, v in pairs)


def _transports(codec, ratio: float, t: int = 3) -> list:
    """The transport of each of the two layers' feature rows (as the engine binds them)."""
    return [Transport(None if codec is None else
                      BoundCodec(CODECS[codec](), ratio, SEED, t, layer, 0), BF16)
            for layer in (0, 1)]


def _oracle(part, data, views: Views, name: str, transports: list) -> dict:
    """Plain PyG on the whole graph, each rank seeing remote feature rows through
    ``transports`` (GAT's logits exact), rows assembled by owner."""
    torch.manual_seed(7)
    ref = ALL_MODELS[name]().double()
    x = data.x.clone().requires_grad_()
    layer = _oracle_layer if name in ATTENTION_MODELS else _dist_layer
    return two_layer_oracle(part, data, ref, x, layer, views, transports)


def oracle(ctx, part, data, parts: str) -> dict:
    views = Views(parts, ctx.world_size)
    out = {}
    plans = [(m, mode, True) for m in ("gcn", "sage", "edgeconv") for mode in ("sar", "sa",
                                                                                 "halo")]
    plans += [("gat", "sar", True), ("gat", "sa", True), ("gat", "sar", False),
              ("gat", "sa", False), ("gat", "halo", True), ("gatv2", "sar", True),
              ("gatv2", "sa", True), ("gatv2", "halo", True)]
    refs, plains, sars = {}, {}, {}
    for name, mode, kernels in plans:
        for codec, ratio in SETTINGS:
            if name in ATTENTION_MODELS and codec == "subset":
                continue  # attention with a codec is covered by the compression cases
            setting = f"{codec or 'cast'}{ratio:g}"
            if (name, setting) not in refs:
                refs[name, setting] = _oracle(part, data, views, name,
                                              _transports(codec, ratio))
            if (name, mode, kernels) not in plains:
                plains[name, mode, kernels] = run(ctx, part, data, name, mode, kernels=kernels)
            got = run(ctx, part, data, name, mode, BF16, _compressor(codec, ratio), kernels)
            case = f"{name}/{mode}/k{int(kernels)}/{setting}"
            v = {"vs_oracle": _max_rel(got, refs[name, setting]),
                 "vs_plain": _max_rel(got, plains[name, mode, kernels]),
                 "ledger_is_comm": _ledger_total(got["ledger"]) == got["comm_sent"]}
            if mode == "sar":
                sars[name, kernels, setting] = got
            elif mode == "sa":
                v["sa_identical_to_sar"] = _identical(got, sars[name, kernels, setting])
            out[case] = v
    return out


def _by_entry(ledger: dict) -> dict:
    return {f"{layer}/{d}/{k}": n for layer, dirs in ledger.items() for d, v in dirs.items()
            for k, n in v.items()}


def traffic(ctx, part, data) -> dict:
    """Ledgers with and without a wire dtype (see the module docstring)."""
    g = part.graph
    rows_out, rows_in = sum(g.send_counts), sum(g.recv_counts)
    out = {}
    for mode in ("sar", "sa", "halo"):
        run(ctx, part, data, "gcn", mode)  # warm the graph's caches (normalisation)
        for dtype, wire in ((torch.float32, BF16), (torch.float64, BF16),
                            (torch.float64, torch.float32)):
            plain = run(ctx, part, data, "gcn", mode, dtype=dtype)
            got = run(ctx, part, data, "gcn", mode, wire, dtype=dtype)
            out[f"gcn/{mode}/{str(dtype)[6:]}/{str(wire)[6:]}"] = {
                "plain": _by_entry(plain["ledger"]), "got": _by_entry(got["ledger"]),
                "factor": torch.empty((), dtype=dtype).element_size()
                // torch.empty((), dtype=wire).element_size(),
                "comm_sent": got["comm_sent"], "ledger_sent": _ledger_total(got["ledger"]),
                "vs_plain": _max_rel(got, plain)}
        # Truncate at ratio 2 on float32 rows, then bf16: the kept channels at 2 bytes
        got = run(ctx, part, data, "gcn", mode, BF16, _compressor("truncate", 2.0),
                  dtype=torch.float32)
        expected = {}
        for layer, width in (("conv1", 8), ("conv2", 5)):
            row = Transport(BoundCodec(CODECS["truncate"](), 2.0, SEED, 3, 0, 0),
                            BF16).wire_bytes(1, (width,), torch.float32)
            expected[layer] = {"rows": {"sent": rows_out * row, "recv": rows_in * row},
                               "grads": {"sent": rows_in * row, "recv": rows_out * row}}
        out[f"truncate2/{mode}"] = {"ledger": got["ledger"], "expected": expected,
                                    "comm_sent": got["comm_sent"],
                                    "ledger_sent": _ledger_total(got["ledger"])}
        # Quantize: its packed integer codes cross as they are
        quantized = run(ctx, part, data, "gcn", mode, None, _compressor("quantize", 4.0))
        both = run(ctx, part, data, "gcn", mode, BF16, _compressor("quantize", 4.0))
        out[f"quantize4/{mode}"] = {"identical": _identical(quantized, both),
                                    "ledger_equal": quantized["ledger"] == both["ledger"]}
    # GAT: features [H, C] per row at 2 bytes a value, logits [H] at 8 (float64, raw)
    for mode, kernels in (("sar", True), ("sar", False), ("halo", True)):
        got = run(ctx, part, data, "gat", mode, BF16, kernels=kernels)
        out[f"gat/{mode}/k{int(kernels)}"] = {
            "rows_sent": {layer: d["rows"]["sent"] for layer, d in got["ledger"].items()},
            "expected": {layer: rows_out * (h * c * 2 + h * 8)
                         for layer, (h, c) in (("conv1", (2, 4)), ("conv2", (3, 5)))}}
    # eval mode: the wire dtype applies too (it is not a training-only compression)
    plain = run(ctx, part, data, "gcn", "sar", dtype=torch.float32, train=False)
    got = run(ctx, part, data, "gcn", "sar", BF16, dtype=torch.float32, train=False)
    out["eval"] = {"plain_rows": plain["ledger"]["conv1"]["rows"]["sent"],
                   "rows": got["ledger"]["conv1"]["rows"]["sent"],
                   "vs_plain": _max_rel(got, plain)}
    return out


def wire_dtype(ctx, part, data, parts: str) -> dict:
    return {"oracle": oracle(ctx, part, data, parts), "bytes": traffic(ctx, part, data)}
