"""Precision benchmark: float32 vs bf16 autocast vs bf16 on the wire (step time, memory per rank,
bytes per epoch) and WordNet test accuracy, float32 vs bf16-mixed.

    python benchmarks/precision.py --measure                 # dense SBM + WordNet, P = 1, 2, 4
    python benchmarks/precision.py --accuracy                # WordNet, P = 2, 3 seeds
    python benchmarks/precision.py --write-docs              # tables from the committed JSON
    python benchmarks/precision.py --plot-only               # plots from the committed JSON

Variants (:data:`VARIANTS`), each measured in the same launch as its float32 baseline:

* ``float32``: the model and every tensor in float32;
* ``bf16``: ``torch.autocast("cpu", dtype=torch.bfloat16)`` around the forward (the loss is
  taken on the output cast to float32, outside autocast), rows crossing in their own dtype;
* ``bf16_wire``: the same autocast plus ``SARConfig(wire_dtype=torch.bfloat16)``;
* ``float32_wire``: float32 compute, ``SARConfig(wire_dtype=torch.bfloat16)``.

At P = 1 nothing crosses the network, so the two wire variants equal their compute variant and
are not run. One ``mpiexec -n P`` launch per (workload, P) runs every model and variant
(:func:`rank_precision`); per rank it measures, as ``benchmarks/suite.py`` does:

* ``step_s``: median time of a full-batch training step (forward, loss, backward, gradient
  all-reduce, optimizer) over ``repeats`` steps after ``warmup`` steps,
* ``peak_growth_mb``: peak RSS growth during a step (``VmHWM`` after a reset minus ``VmRSS``
  before), max over the measured steps,
* ``saved_mb``: bytes saved for backward during one forward (activation memory: unique
  storages seen by ``torch.autograd.graph.saved_tensors_hooks``),
* ``bytes_sent`` / ``bytes_recv``: the engine's row and gradient traffic of one epoch
  (``comm.stats``), and ``traffic_sent``: the traffic ledger's sent bytes by direction.

The summary takes the max over ranks (time, memory, bytes per rank) and the sum over ranks
(``bytes_sent_total``); ratios are against the float32 row of the same launch. Results:
``benchmarks/results/precision.json``, ``precision_accuracy.json``, plots
``benchmarks/results/plots/precision_*.png``; ``--write-docs`` writes the Markdown tables between
the ``<!-- bench:precision:begin -->`` / ``<!-- bench:precision:end -->`` markers of
``benchmarks/README.md`` and ``docs/precision.md``.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from procmem import MALLOC_ENV  # noqa: E402 (benchmarks/procmem.py)

RESULTS = HERE / "results"
RESULT_JSON = RESULTS / "precision.json"
ACCURACY_JSON = RESULTS / "precision_accuracy.json"
RANK_ENV = {**MALLOC_ENV, "OMP_NUM_THREADS": "1"}
BEGIN, END = "<!-- bench:precision:begin -->", "<!-- bench:precision:end -->"
DOC_FILES = (HERE / "README.md", ROOT / "docs" / "precision.md")

#: name -> (autocast to bf16 around the forward, wire dtype name or None)
VARIANTS: dict[str, tuple[bool, str | None]] = {
    "float32": (False, None),
    "bf16": (True, None),
    "bf16_wire": (True, "bfloat16"),
    "float32_wire": (False, "bfloat16"),
}
VARIANT_NAMES = {"float32": "float32", "bf16": "bf16 autocast",
                 "bf16_wire": "bf16 autocast + bf16 wire", "float32_wire": "float32 + bf16 wire"}
MODELS = ("sage", "gat")
#: goals the measurement is reported against
GOALS = {"p1_speedup": 1.5, "p1_activation_ratio": 1.7, "accuracy_points": 0.3,
         "wire_bytes_ratio": 0.5}


#: hidden width of the models per workload: GraphSAGE 3 x hidden, GAT 3 layers x (channels x 4
#: heads); WordNet's 2,000 input features make its first layer the cost, so it runs narrower
#: models to fit the benchmark's time on a 2-core machine.
WIDTHS = {"tiny": {"sage": 256, "gat": 32}, "sbm_dense": {"sage": 256, "gat": 32},
          "wordnet": {"sage": 64, "gat": 16}}


def workloads() -> dict[str, tuple[str, Callable]]:
    """name -> (description, factory) of the benchmark's graphs."""
    from pyg_sar.datasets import sbm, wordnet
    return {
        "tiny": ("dense SBM, 600 nodes, 4,000 edges (smoke test); GraphSAGE 3 x 256, "
                 "GAT 3 x (32 x 4 heads)",
                 lambda: sbm(num_nodes=600, num_edges=4000, num_classes=4, homophily=0.2,
                             seed=0)),
        "sbm_dense": ("dense SBM, 12,000 nodes, 110,000 edges (80% across 16 communities), "
                      "32 features; GraphSAGE 3 x 256, GAT 3 x (32 x 4 heads), batch norm",
                      lambda: sbm(num_nodes=12_000, num_edges=110_000, num_classes=16,
                                  homophily=0.2, seed=0)),
        "wordnet": ("WordNet 3.0, 117,659 nodes, 367,578 edges, 2,000 features, 45 classes "
                    "(METIS); GraphSAGE 3 x 64, GAT 3 x (16 x 4 heads), batch norm",
                    lambda: wordnet(split_seed=0)),
    }


def build_model(name: str, in_channels: int, classes: int, width: int) -> torch.nn.Module:
    """3-layer GraphSAGE (hidden ``width``) or GAT (hidden ``width`` x 4 heads), batch norm
    between layers (``benchmarks/suite.py``'s models at another width)."""
    from torch_geometric.nn import GAT, GraphSAGE
    if name == "sage":
        return GraphSAGE(in_channels, width, 3, classes, norm="batch_norm")
    if name == "gat":
        return GAT(in_channels, width * 4, 3, classes, heads=4, norm="batch_norm")
    raise ValueError(f"unknown model {name!r} (expected 'sage' or 'gat')")


def _wire(name: str | None):
    return None if name is None else getattr(torch, name)


def _config(mode: str, wire: str | None):
    import pyg_sar
    if wire is None:
        return pyg_sar.SARConfig(mode=mode)
    return pyg_sar.SARConfig(mode=mode, wire_dtype=_wire(wire))


def _autocast(on: bool):
    return torch.autocast("cpu", dtype=torch.bfloat16) if on else contextlib.nullcontext()


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def rank_precision(ctx, parts: str, models: list[str], variants: list[str],
                   widths: dict[str, int], warmup: int = 2, repeats: int = 5,
                   mode: str = "sar") -> list[dict]:
    """Runs on every rank: every (model, variant) on this rank's partition.

    A variant that raises (e.g. an option this tree lacks) is recorded with its ``error``
    and the next one runs; the failure must be the same on every rank (it is for a refused
    configuration, which fails before any communication)."""
    from suite import _measure, _saved_bytes  # benchmarks/suite.py

    import pyg_sar

    part = pyg_sar.load_partition(parts, ctx.rank)
    x, y, mask = part.x, part.y, part.train_mask
    classes = int(part.meta["num_classes"])
    comm = ctx.comm
    results = []
    for model in models:
        for variant in variants:
            autocast, wire = VARIANTS[variant]
            if ctx.world_size == 1 and wire is not None:
                continue  # nothing crosses the network at P = 1
            row = {"model": model, "variant": variant, "rank": ctx.rank, "autocast": autocast,
                   "width": widths[model],
                   "wire_dtype": wire, "mode": mode, "num_nodes": part.num_nodes,
                   "halo_rows": sum(part.graph.recv_counts),
                   "threads": torch.get_num_threads()}
            net = opt = None
            try:
                torch.manual_seed(0)
                net = build_model(model, x.shape[1], classes, widths[model])
                pyg_sar.convert(net, _config(mode, wire))
                pyg_sar.broadcast_parameters(net)
                graph = part.graph
                opt = torch.optim.Adam(net.parameters(), lr=0.01)

                def loss_of(out):
                    return pyg_sar.nn.functional.cross_entropy(out.float(), y, mask)

                def forward(net=net, graph=graph, autocast=autocast):
                    with _autocast(autocast):
                        return net(x, graph)

                losses = []

                def step(net=net, opt=opt, forward=forward, losses=losses) -> dict:
                    comm.stats.reset()
                    comm.traffic.reset()
                    opt.zero_grad()
                    out = forward()
                    loss = loss_of(out)
                    loss.backward()
                    t = time.perf_counter()
                    pyg_sar.all_reduce_gradients(net)
                    allreduce_s = time.perf_counter() - t
                    opt.step()
                    losses.append(float(loss))
                    s = comm.stats
                    led = comm.traffic.as_dict()
                    by_dir = {d: sum(v[d]["sent"] for v in led.values() if d in v)
                              for d in ("rows", "refetch", "grads")}
                    return {"bytes_sent": s.bytes_sent, "bytes_recv": s.bytes_recv,
                            "messages": s.messages, "comm_wait_s": s.wait_s,
                            "allreduce_s": allreduce_s, "out_dtype_bf16": int(
                                out.dtype == torch.bfloat16),
                            **{f"traffic_{d}": b for d, b in by_dir.items()}}

                for _ in range(warmup):
                    step()
                opt.zero_grad()
                saved = _saved_bytes(forward, loss_of)
                m = _measure(step, comm.barrier, repeats)
                row.update(step_s=m["epoch_s"], step_times_s=m["epoch_times_s"],
                           peak_growth_mb=m["peak_growth_mb"],
                           peak_growth_all_mb=m["peak_growth_all_mb"],
                           saved_mb=saved / 2**20, bytes_sent=int(m["bytes_sent"]),
                           bytes_recv=int(m["bytes_recv"]), messages=int(m["messages"]),
                           comm_wait_s=m["comm_wait_s"], allreduce_s=m["allreduce_s"],
                           traffic_sent={d: int(m[f"traffic_{d}"])
                                         for d in ("rows", "refetch", "grads")},
                           output_dtype="bfloat16" if m["out_dtype_bf16"] else "float32",
                           first_loss=losses[0], last_loss=losses[-1], error=None)
            except Exception as exc:  # noqa: BLE001 (recorded, reported, the launch goes on)
                row["error"] = _error_text(exc)
            results.append(row)
            del net, opt
            gc.collect()
    return results


def rank_accuracy(ctx, parts: str, seed: int, precisions: list[str], epochs: int,
                  hidden: int, layers: int, lr: float, dropout: float,
                  eval_every: int) -> list[dict]:
    """Runs on every rank: train a GraphSAGE from ``seed`` once per precision (``"32"``: float32,
    ``"bf16-mixed"``: bf16 autocast around the forward in training and evaluation); returns the
    final test accuracy, the best validation accuracy and the test accuracy at it."""
    from torch_geometric.nn import GraphSAGE

    import pyg_sar
    from pyg_sar.nn.functional import accuracy, cross_entropy

    part = pyg_sar.load_partition(parts, ctx.rank)
    x, y = part.x, part.y
    classes = int(part.meta["num_classes"])
    out_rows = []
    for precision in precisions:
        if precision not in ("32", "bf16-mixed"):
            raise ValueError(f"rank_accuracy: precision must be '32' or 'bf16-mixed' "
                             f"(got {precision!r})")
        cast = precision == "bf16-mixed"
        row = {"seed": seed, "precision": precision, "rank": ctx.rank}
        try:
            torch.manual_seed(seed)
            net = GraphSAGE(x.shape[1], hidden, layers, classes, dropout=dropout)
            pyg_sar.convert(net)
            pyg_sar.broadcast_parameters(net)
            opt = torch.optim.Adam(net.parameters(), lr=lr)
            history, times = [], []
            best_val, test_at_best = -1.0, float("nan")
            for epoch in range(1, epochs + 1):
                net.train()
                t = time.perf_counter()
                opt.zero_grad()
                with _autocast(cast):
                    out = net(x, part.graph)
                loss = cross_entropy(out.float(), y, part.train_mask)
                loss.backward()
                pyg_sar.all_reduce_gradients(net)
                opt.step()
                times.append(time.perf_counter() - t)
                if epoch % eval_every == 0 or epoch == epochs:
                    net.eval()
                    with torch.no_grad(), _autocast(cast):
                        out = net(x, part.graph).float()
                    val = accuracy(out, y, part.val_mask)
                    test = accuracy(out, y, part.test_mask)
                    if val > best_val:
                        best_val, test_at_best = val, test
                    history.append({"epoch": epoch, "loss": float(loss), "val_acc": val,
                                    "test_acc": test})
            row.update(final_test_acc=history[-1]["test_acc"],
                       final_val_acc=history[-1]["val_acc"], best_val_acc=best_val,
                       test_acc_at_best_val=test_at_best, history=history,
                       step_s_median=statistics.median(times), error=None)
            del net, opt
        except Exception as exc:  # noqa: BLE001 (recorded, reported)
            row["error"] = _error_text(exc)
        out_rows.append(row)
        gc.collect()
    return out_rows


# ----------------------------------------------------------------------------- summary


def summarise(rows: list[dict]) -> list[dict]:
    """One line per (workload, P, model, variant): max over ranks (time, memory, bytes per rank),
    sum over ranks (bytes in total), ratios against the float32 line of the same launch."""
    keys: dict[tuple, list[dict]] = {}
    for r in rows:
        keys.setdefault((r["workload"], r["world_size"], r["model"], r["variant"]), []).append(r)
    order = list(VARIANTS)
    out = []
    for (wl, world, model, variant), rs in sorted(
            keys.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2], order.index(kv[0][3]))):
        errors = sorted({r["error"] for r in rs if r.get("error")})
        line = {"workload": wl, "world_size": world, "model": model, "variant": variant,
                "error": errors[0] if errors else None}
        if not errors:
            line.update(
                step_s=max(r["step_s"] for r in rs),
                peak_growth_mb=max(r["peak_growth_mb"] for r in rs),
                saved_mb=max(r["saved_mb"] for r in rs),
                bytes_sent_mb=max(r["bytes_sent"] for r in rs) / 2**20,
                bytes_recv_mb=max(r["bytes_recv"] for r in rs) / 2**20,
                bytes_sent_total=sum(r["bytes_sent"] for r in rs),
                bytes_recv_total=sum(r["bytes_recv"] for r in rs),
                traffic_sent={d: sum(r["traffic_sent"][d] for r in rs)
                              for d in ("rows", "refetch", "grads")},
                comm_wait_s=max(r["comm_wait_s"] for r in rs),
                output_dtype=rs[0]["output_dtype"],
                first_loss=rs[0]["first_loss"])
        out.append(line)
    base = {(s["workload"], s["world_size"], s["model"]): s for s in out
            if s["variant"] == "float32" and not s["error"]}
    for s in out:
        b = base.get((s["workload"], s["world_size"], s["model"]))
        if s["error"] or b is None:
            continue
        s["speedup_vs_float32"] = b["step_s"] / s["step_s"]
        s["peak_ratio_vs_float32"] = b["peak_growth_mb"] / s["peak_growth_mb"]
        s["saved_ratio_vs_float32"] = b["saved_mb"] / s["saved_mb"]
        s["bytes_ratio_vs_float32"] = (s["bytes_sent_total"] / b["bytes_sent_total"]
                                       if b["bytes_sent_total"] else None)
    return out


def summarise_accuracy(rows: list[dict]) -> list[dict]:
    """Per precision: the seeds' final test accuracies (rank 0's copy: every rank reports the
    same global value), their mean and spread; the difference bf16 - float32 per seed."""
    ok = [r for r in rows if r["rank"] == 0 and not r.get("error")]
    out = []
    for precision in ("32", "bf16-mixed"):
        rs = sorted((r for r in ok if r["precision"] == precision), key=lambda r: r["seed"])
        if not rs:
            continue
        accs = [r["final_test_acc"] for r in rs]
        out.append({"precision": precision, "seeds": [r["seed"] for r in rs],
                    "final_test_acc": accs, "mean": statistics.mean(accs),
                    "std": statistics.stdev(accs) if len(accs) > 1 else 0.0,
                    "test_acc_at_best_val": [r["test_acc_at_best_val"] for r in rs],
                    "step_s_median": [r["step_s_median"] for r in rs]})
    by = {(r["precision"], r["seed"]): r for r in ok}
    diffs = [100 * (by[("bf16-mixed", s)]["final_test_acc"] - by[("32", s)]["final_test_acc"])
             for (p, s) in sorted(by) if p == "32" and ("bf16-mixed", s) in by]
    if diffs:
        out.append({"precision": "bf16-mixed - 32 (points)", "per_seed": diffs,
                    "mean": statistics.mean(diffs)})
    return out


# ----------------------------------------------------------------------------- tables


def _mb(v: float) -> str:
    return f"{v:,.1f} MB" if v < 100 else f"{v:,.0f} MB"


def table(result: dict) -> str:
    """The measurement table (Markdown) of a :func:`measure` result."""
    lines = ["| workload | model | P | variant | step time (median) | speed-up vs float32 | "
             "peak RSS growth / rank | saved for backward / rank | float32 / variant | "
             "sent per epoch, all ranks | variant / float32 |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in result["summary"]:
        head = (f"| {s['workload']} | {s['model']} | {s['world_size']} | "
                f"{VARIANT_NAMES[s['variant']]} |")
        if s["error"]:
            lines.append(f"{head} failed: {s['error'].replace('|', '/')} "
                         "| | | | | | |")
            continue
        sp = s.get("speedup_vs_float32")
        sv = s.get("saved_ratio_vs_float32")
        br = s.get("bytes_ratio_vs_float32")
        sent = "—" if s["world_size"] == 1 else f"{s['bytes_sent_total'] / 2**20:,.1f} MB"
        lines.append(
            f"{head} {s['step_s']:.3f} s | "
            f"{'—' if sp is None else f'{sp:.2f}x'} | {_mb(s['peak_growth_mb'])} | "
            f"{_mb(s['saved_mb'])} | {'—' if sv is None else f'{sv:.2f}x'} | {sent} | "
            f"{'—' if br is None else f'{br:.3f}'} |")
    return "\n".join(lines)


def accuracy_table(acc: dict) -> str:
    """The accuracy table (Markdown) of an :func:`accuracy_runs` result."""
    cfg = acc["config"]
    lines = [f"WordNet, GraphSAGE {cfg['layers']} x {cfg['hidden']} (dropout {cfg['dropout']}, "
             f"Adam lr {cfg['lr']}, {cfg['epochs']} epochs), P = {acc['world_size']}, "
             f"final-epoch test accuracy:", "",
             "| precision | " + " | ".join(f"seed {s}" for s in cfg["seeds"]) +
             " | mean ± std |", "|---|" + "---|" * (len(cfg["seeds"]) + 1)]
    for s in acc["summary"]:
        if "final_test_acc" in s:
            by = dict(zip(s["seeds"], s["final_test_acc"]))
            cells = " | ".join(f"{100 * by[k]:.2f}%" if k in by else "—" for k in cfg["seeds"])
            name = "float32" if s["precision"] == "32" else "bf16 autocast (bf16-mixed)"
            lines.append(f"| {name} | {cells} | {100 * s['mean']:.2f}% ± "
                         f"{100 * s['std']:.2f} |")
        else:
            cells = " | ".join(f"{d:+.2f}" for d in s["per_seed"])
            lines.append(f"| difference (points) | {cells} | {s['mean']:+.2f} |")
    gains = [100 * (r["history"][-1]["val_acc"] - r["history"][-2]["val_acc"])
             for r in acc["rows"] if r["rank"] == 0 and not r.get("error")
             and len(r["history"]) >= 2]
    if gains:
        last = acc["rows"][0]["history"]
        lines.append(f"\nValidation accuracy over the last {last[-1]['epoch'] - last[-2]['epoch']} "
                     f"epochs rose by {min(gains):.2f}-{max(gains):.2f} points (runs of both "
                     "precisions): the runs had not converged (the time of this measurement "
                     "did not allow more epochs); the comparison is at equal epochs and seeds.")
    commits = {}
    for r in acc["rows"]:
        if r["rank"] == 0 and r.get("commit"):
            commits.setdefault(r["precision"], []).append(r["commit"])
    if commits:
        lines.append("\npyg_sar at: " + "; ".join(
            f"{'float32' if k == '32' else k} {', '.join(dict.fromkeys(v))}"
            for k, v in sorted(commits.items())) + " (+dirty: the tree had uncommitted changes).")
    for f in acc.get("failures", []):
        lines.append(f"\nFailed: precision {f['precision']}, seed {f['seed']}: {f['error']}")
    return "\n".join(lines)


def goals(result: dict | None, acc: dict | None) -> list[str]:
    """The goals, as measured (met or missed)."""
    out = []

    def verdict(ok: bool) -> str:
        return "met" if ok else "missed"

    if result:
        for s in result["summary"]:
            if s["world_size"] == 1 and s["variant"] == "bf16" and not s["error"] \
                    and "speedup_vs_float32" in s:
                out.append(
                    f"{s['workload']}, {s['model']}, P = 1: bf16 step speed-up over float32 "
                    f"{s['speedup_vs_float32']:.2f}x (goal >= "
                    f"{GOALS['p1_speedup']}x: {verdict(s['speedup_vs_float32'] >= GOALS['p1_speedup'])}); "  # noqa: E501
                    f"activation memory {s['saved_ratio_vs_float32']:.2f}x lower (goal >= "
                    f"{GOALS['p1_activation_ratio']}x: "
                    f"{verdict(s['saved_ratio_vs_float32'] >= GOALS['p1_activation_ratio'])})")
        for model in MODELS:
            for variant in ("float32_wire", "bf16_wire"):
                ws = [s for s in result["summary"] if s["variant"] == variant
                      and s["model"] == model and not s["error"]
                      and s.get("bytes_ratio_vs_float32") is not None]
                if not ws:
                    continue
                lo = min(s["bytes_ratio_vs_float32"] for s in ws)
                hi = max(s["bytes_ratio_vs_float32"] for s in ws)
                why = ("; GAT's attention logits cross in their own dtype by design, see "
                       "docs/compression.md" if model == "gat" and hi > 0.5 else "")
                span = f"{lo:.3f}" if f"{lo:.3f}" == f"{hi:.3f}" else f"{lo:.3f}-{hi:.3f}"
                out.append(f"{model}, {VARIANT_NAMES[variant]}: bytes per epoch / float32 "
                           f"{span} at every workload and P > 1 (goal: halved: "
                           f"{verdict(hi <= GOALS['wire_bytes_ratio'])}{why})")
    if acc:
        d = [s for s in acc["summary"] if "per_seed" in s]
        if d:
            worst = max(abs(v) for v in d[0]["per_seed"])
            out.append(f"WordNet accuracy, bf16-mixed - float32: mean {d[0]['mean']:+.2f} "
                       f"points, per seed at most {worst:.2f} in size (goal within "
                       f"{GOALS['accuracy_points']}: {verdict(abs(d[0]['mean']) <= GOALS['accuracy_points'])} "  # noqa: E501
                       f"for the mean)")
    return out


def _commits(result: dict) -> str:
    """The commits the launches ran at (``+dirty``: the tree had uncommitted changes)."""
    seen = [f.get("commit") for f in result.get("launch_s", []) if f.get("commit")]
    seen = list(dict.fromkeys(seen)) or [result["machine"].get("commit", "unknown")]
    return seen[0] if len(seen) == 1 else "commits " + ", ".join(seen) + " (by launch)"


def docs_section(result: dict | None, acc: dict | None) -> str:
    """The generated text that goes between the markers (no marker lines)."""
    parts = ["<!-- generated by `python benchmarks/precision.py --write-docs` from "
             "benchmarks/results/precision.json and precision_accuracy.json; do not edit -->", ""]
    if result:
        m = result["machine"]
        parts += [f"Measured on {m['cpu_count']} CPU cores ({m['processor']}; bf16 matmul "
                  f"instructions: {m['bf16_isa']}), torch {m['torch']}, pyg_sar at "
                  f"{_commits(result)}, one thread per rank, "
                  f"{result['warmup']} warm-up steps then the median of {result['repeats']}; "
                  "P ranks share the cores (oversubscribed and with other jobs running, so "
                  "times are noisy; ratios compare variants of the same launch). Memory and "
                  "time are the max over ranks. At P = 1 nothing crosses the network, so the "
                  "wire variants are not run. Saved for backward counts every tensor autograd "
                  "keeps, inputs included: under autocast the first layer keeps the bf16 copy "
                  "of the input features (WordNet's 117,659 x 2,000: 898 MB in float32, 449 MB "
                  "in bf16), and the peak RSS growth of a bf16 step includes making that copy.",
                  ""]
        parts += [f"* `{k}`: {v}" for k, v in result["workloads"].items()]
        parts += ["", table(result), ""]
        for f in result.get("failures", []):
            parts.append(f"* launch failed: {f['workload']}, P = {f['world_size']}: "
                         f"{f['error']}")
    if acc:
        parts += [accuracy_table(acc), ""]
    g = goals(result, acc)
    if g:
        parts += ["Goals, as measured:", ""] + [f"* {line}" for line in g] + [""]
    return "\n".join(parts).rstrip("\n")


def splice(text: str, section: str, path: Path) -> str:
    """``text`` with the part between the markers replaced by ``section``."""
    if BEGIN not in text or END not in text or text.index(BEGIN) > text.index(END):
        raise ValueError(f"{path}: the markers {BEGIN} / {END} are missing or out of order")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{section}\n{END}{tail}"


def marked_section(text: str) -> str:
    """The part of ``text`` between the markers (without them and their newlines)."""
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def load_results() -> tuple[dict | None, dict | None]:
    result = json.loads(RESULT_JSON.read_text()) if RESULT_JSON.exists() else None
    acc = json.loads(ACCURACY_JSON.read_text()) if ACCURACY_JSON.exists() else None
    return result, acc


def write_docs(files: tuple[Path, ...] = DOC_FILES) -> list[str]:
    """Regenerate the marked section of every file in ``files`` that exists; returns the paths
    written (a missing file is skipped and reported by the caller)."""
    from pyg_sar.files import atomic_write
    section = docs_section(*load_results())
    written = []
    for path in files:
        if not path.exists():
            continue
        text = path.read_text()
        new = splice(text, section, path)
        if new != text:
            atomic_write(path, new)
        written.append(str(path))
    return written


# ----------------------------------------------------------------------------- plots


def plot(result: dict | None, acc: dict | None, out_dir: Path = RESULTS / "plots") -> list[str]:
    """precision_ratios.png: speed-up, activation-memory and bytes ratios vs float32 per
    (workload, model, P); precision_accuracy.png: WordNet test accuracy per seed."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []

    def save(fig, name):
        path = out_dir / name
        tmp = path.with_name(path.stem + ".tmp.png")
        fig.savefig(tmp, dpi=110)
        plt.close(fig)
        os.replace(tmp, path)
        written.append(str(path))

    if result:
        summary = [s for s in result["summary"] if not s["error"]
                   and "speedup_vs_float32" in s and s["workload"] != "tiny"]
        panels = sorted({(s["workload"], s["model"]) for s in summary})
        metrics = (("speedup_vs_float32", "step speed-up vs float32 (x)", GOALS["p1_speedup"]),
                   ("saved_ratio_vs_float32", "activation memory, float32 / variant (x)",
                    GOALS["p1_activation_ratio"]),
                   ("bytes_ratio_vs_float32", "bytes per epoch, variant / float32",
                    GOALS["wire_bytes_ratio"]))
        if panels:
            fig, axes = plt.subplots(len(metrics), len(panels),
                                     figsize=(3.6 * len(panels), 2.9 * len(metrics) + 0.5),
                                     squeeze=False)
            for j, (wl, model) in enumerate(panels):
                for i, (key, label, goal) in enumerate(metrics):
                    ax = axes[i][j]
                    for k, variant in enumerate(VARIANTS):
                        pts = sorted((s["world_size"], s[key]) for s in summary
                                     if s["workload"] == wl and s["model"] == model
                                     and s["variant"] == variant and s.get(key) is not None)
                        if pts:
                            ax.plot([p for p, _ in pts], [v for _, v in pts], "o-",
                                    color=f"C{k}", label=VARIANT_NAMES[variant])
                    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
                    ax.axhline(goal, color="red", lw=0.8, ls="--",
                               label="goal" if i == 0 else None)
                    ax.set_xlim(0.8, 5)
                    if key == "bytes_ratio_vs_float32":
                        ax.set_ylim(0, 1.1)
                    ax.set_xscale("log", base=2)
                    ax.set_xticks([1, 2, 4])
                    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
                    ax.set_xlabel("P (processes)", fontsize=8)
                    ax.set_ylabel(label, fontsize=7)
                    ax.set_title(f"{wl}, {model}", fontsize=9)
                    ax.grid(alpha=0.3)
                    if i == 0 and j == 0:
                        ax.legend(fontsize=6)
            fig.suptitle("bf16 vs float32 (same launch; 2 shared cores: times noisy)",
                         fontsize=10)
            fig.tight_layout()
            save(fig, "precision_ratios.png")
    if acc:
        rows = [s for s in acc["summary"] if "final_test_acc" in s]
        if rows:
            fig, ax = plt.subplots(figsize=(4.6, 3.2))
            for k, s in enumerate(rows):
                name = "float32" if s["precision"] == "32" else "bf16-mixed"
                ax.plot(s["seeds"], [100 * a for a in s["final_test_acc"]], "o",
                        color=f"C{k}", label=f"{name} (mean {100 * s['mean']:.2f}%)")
            ax.set_xticks(acc["config"]["seeds"])
            ax.set_xlabel("seed")
            ax.set_ylabel("final test accuracy (%)")
            ax.set_title(f"WordNet, GraphSAGE, P = {acc['world_size']}", fontsize=9)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
            fig.tight_layout()
            save(fig, "precision_accuracy.png")
    return written


# ----------------------------------------------------------------------------- launches


def _bf16_isa() -> str:
    try:
        flags = Path("/proc/cpuinfo").read_text().split("flags", 2)[1].split("\n", 1)[0]
    except (OSError, IndexError):
        return "unknown"
    have = [f for f in ("avx512_bf16", "amx_bf16") if f" {f}" in flags]
    return ", ".join(have) if have else "none (no avx512_bf16 / amx_bf16)"


def _commit() -> str:
    """The tree's commit (``+dirty`` with uncommitted changes under pyg_sar/ or csrc/)."""
    import subprocess
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "pyg_sar", "csrc"],
                               cwd=ROOT, text=True, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty.strip() else "")


def _machine() -> dict:
    return {"cpu_count": os.cpu_count(), "processor": platform.processor() or platform.machine(),
            "bf16_isa": _bf16_isa(), "torch": torch.__version__,
            "python": platform.python_version(), "commit": _commit()}


def _partition(name: str, world: int, work: Path, cache: dict) -> Path:
    import pyg_sar
    parts = work / f"{name}-{world}"
    desc, factory = workloads()[name]
    stamp = parts / "workload.txt"  # a folder of another size of the workload is redone
    if not (parts / "meta.json").exists() or not stamp.exists() or stamp.read_text() != desc:
        if name not in cache:
            cache[name] = factory()
        pyg_sar.partition_graph(cache[name], world, parts, method="metis", overwrite=True,
                                balance="nodes")  # as the results were made
        stamp.write_text(desc)
    return parts


def measure(names: list[str], worlds: list[int], models: list[str], variants: list[str],
            warmup: int, repeats: int, work: Path, out: Path | None,
            timeout: float = 3600.0) -> dict:
    """One launch per (workload, P); returns (and writes to ``out`` after each launch) the
    result with per-rank ``rows``, the ``summary`` and the ``failures`` of whole launches."""
    from pyg_sar.files import atomic_write
    from pyg_sar.testing import run_on_ranks
    from pyg_sar.testing.launcher import RankFailure, RankTimeout

    if warmup < 2 or repeats < 5:
        raise ValueError(f"need warmup >= 2 and repeats >= 5 (got warmup={warmup}, "
                         f"repeats={repeats})")
    loads = workloads()
    for n in names:
        if n not in loads:
            raise ValueError(f"unknown workload {n!r} (have {list(loads)})")
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"unknown variant {v!r} (have {list(VARIANTS)})")
    if "float32" not in variants:
        raise ValueError("variants must include 'float32' (the baseline of every ratio)")
    result = {"machine": _machine(), "threads_per_rank": 1, "warmup": warmup,
              "repeats": repeats, "mode": "sar", "variants": variants,
              "workloads": {n: loads[n][0] for n in names}, "rows": [], "summary": [],
              "failures": [], "launch_s": []}
    cache: dict = {}
    target = f"{HERE / 'precision.py'}:rank_precision"
    for name in names:
        for world in worlds:
            parts = _partition(name, world, work, cache)
            t = time.perf_counter()
            try:
                res = run_on_ranks(target, world, timeout=timeout, env=RANK_ENV,
                                   kwargs={"parts": str(parts), "models": models,
                                           "variants": variants, "widths": WIDTHS[name],
                                           "warmup": warmup,
                                           "repeats": repeats})
            except (RankFailure, RankTimeout) as exc:
                msg = str(exc).strip().splitlines() or [type(exc).__name__]
                err = next((m for m in reversed(msg) if "Error" in m), msg[-1])
                result["failures"].append({"workload": name, "world_size": world,
                                           "error": err[:300]})
                print(f"{name} P={world}: FAILED: {err}", flush=True)
                continue
            finally:
                result["launch_s"].append({"workload": name, "world_size": world,
                                           "wall_s": time.perf_counter() - t,
                                           "commit": result["machine"]["commit"]})
            for rank_rows in res:
                for r in rank_rows:
                    r.update(workload=name, world_size=world)
                    result["rows"].append(r)
            result["summary"] = summarise(result["rows"])
            for s in result["summary"]:
                if s["workload"] == name and s["world_size"] == world:
                    if s["error"]:
                        print(f"{name} P={world} {s['model']} {s['variant']}: {s['error']}",
                              flush=True)
                        continue
                    print(f"{name} P={world} {s['model']} {s['variant']:12s} "
                          f"step {s['step_s']:.3f} s ({s.get('speedup_vs_float32', 0):.2f}x) "
                          f"peak {s['peak_growth_mb']:.1f} MB saved {s['saved_mb']:.1f} MB "
                          f"({s.get('saved_ratio_vs_float32', 0):.2f}x) sent "
                          f"{s['bytes_sent_total'] / 2**20:.2f} MB", flush=True)
            if out is not None:
                atomic_write(out, json.dumps(result, indent=1))
    return result


def accuracy_runs(seeds: list[int], world: int, epochs: int, hidden: int, layers: int,
                  lr: float, dropout: float, eval_every: int, work: Path,
                  out: Path | None, timeout: float = 3600.0, workload: str = "wordnet",
                  precisions: tuple[str, ...] = ("32", "bf16-mixed"), merge: bool = False) -> dict:
    """One launch per seed (each of ``precisions`` in turn, same seed); written after each
    launch. ``merge``: keep the rows of ``out`` for other (seed, precision) if its
    configuration is the same."""
    from pyg_sar.files import atomic_write
    from pyg_sar.testing import run_on_ranks
    from pyg_sar.testing.launcher import RankFailure, RankTimeout

    acc = {"machine": _machine(), "workload": workload, "world_size": world,
           "config": {"model": "sage", "layers": layers, "hidden": hidden, "dropout": dropout,
                      "lr": lr, "epochs": epochs, "eval_every": eval_every, "seeds": seeds,
                      "optimizer": "Adam", "weight_decay": 0.0, "split_seed": 0,
                      "partition": "metis"},
           "rows": [], "summary": [], "failures": []}
    if merge and out is not None and out.exists():
        old = json.loads(out.read_text())
        same = {k: v for k, v in old["config"].items() if k != "seeds"} == \
            {k: v for k, v in acc["config"].items() if k != "seeds"}
        if not same or old["world_size"] != world:
            raise ValueError(f"--merge: {out} was measured with another configuration "
                             f"({old['config']}, P = {old['world_size']})")
        redo = {(s, p) for s in seeds for p in precisions}
        acc["rows"] = [r for r in old["rows"] if (r["seed"], r["precision"]) not in redo]
        acc["failures"] = [f for f in old["failures"]
                           if (f["seed"], f["precision"]) not in redo]
        acc["config"]["seeds"] = sorted(set(old["config"]["seeds"]) | set(seeds))
        acc["summary"] = summarise_accuracy(acc["rows"])
    parts = _partition(workload, world, work, {})
    target = f"{HERE / 'precision.py'}:rank_accuracy"
    for seed in seeds:
        try:
            res = run_on_ranks(target, world, timeout=timeout, env=RANK_ENV,
                               kwargs={"parts": str(parts), "seed": seed,
                                       "precisions": list(precisions), "epochs": epochs,
                                       "hidden": hidden, "layers": layers, "lr": lr,
                                       "dropout": dropout, "eval_every": eval_every})
        except (RankFailure, RankTimeout) as exc:
            msg = str(exc).strip().splitlines() or [type(exc).__name__]
            acc["failures"].extend({"seed": seed, "precision": p,
                                    "error": next((m for m in reversed(msg) if "Error" in m),
                                                  msg[-1])[:300]} for p in precisions)
            continue
        for rank_rows in res:
            for r in rank_rows:
                r["commit"] = acc["machine"]["commit"]
            acc["rows"].extend(rank_rows)
        for r in res[0]:
            if r.get("error"):
                acc["failures"].append({"seed": seed, "precision": r["precision"],
                                        "error": r["error"]})
            else:
                print(f"seed {seed} {r['precision']:10s} test {100 * r['final_test_acc']:.2f}% "
                      f"(best val {100 * r['best_val_acc']:.2f}%, step "
                      f"{r['step_s_median']:.2f} s)", flush=True)
        acc["summary"] = summarise_accuracy(acc["rows"])
        if out is not None:
            atomic_write(out, json.dumps(acc, indent=1))
    return acc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--measure", action="store_true", help="step time, memory, bytes")
    p.add_argument("--accuracy", action="store_true", help="WordNet accuracy, 3 seeds")
    p.add_argument("--write-docs", action="store_true",
                   help="regenerate the tables between the markers from the JSON")
    p.add_argument("--plot-only", action="store_true", help="plots from the JSON")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--workloads", nargs="+", default=["sbm_dense", "wordnet"])
    p.add_argument("--world-sizes", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--merge", action="store_true",
                   help="keep the rows of the existing JSON for other (workload, P)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--acc-world-size", type=int, default=2)
    p.add_argument("--precisions", nargs="+", default=["32", "bf16-mixed"],
                   choices=["32", "bf16-mixed"])
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--work", default="/tmp/pyg_sar_bench_precision")
    p.add_argument("--out", default=None, help="measurement JSON (default: results/)")
    p.add_argument("--acc-out", default=None, help="accuracy JSON (default: results/)")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per launch")
    args = p.parse_args(argv)
    if not (args.measure or args.accuracy or args.write_docs or args.plot_only):
        p.error("nothing to do: give --measure, --accuracy, --write-docs or --plot-only")
    work = Path(args.work)
    if args.measure:
        out = Path(args.out) if args.out else RESULT_JSON
        partial = work / "precision_partial.json"  # written after every launch
        work.mkdir(parents=True, exist_ok=True)
        result = measure(args.workloads, args.world_sizes, args.models, args.variants,
                         args.warmup, args.repeats, work, partial, args.timeout)
        if args.merge and out.exists():
            old = json.loads(out.read_text())
            redo = {(n, w) for n in args.workloads for w in args.world_sizes}
            result["rows"] = [r for r in old["rows"]
                              if (r["workload"], r["world_size"]) not in redo] + result["rows"]
            result["failures"] = [f for f in old.get("failures", [])
                                  if (f["workload"], f["world_size"]) not in redo] \
                + result["failures"]
            result["launch_s"] = [f for f in old.get("launch_s", [])
                                  if (f["workload"], f["world_size"]) not in redo] \
                + result["launch_s"]
            result["workloads"] = {**old["workloads"], **result["workloads"]}
            result["summary"] = summarise(result["rows"])
        from pyg_sar.files import atomic_write
        atomic_write(out, json.dumps(result, indent=1))
        print(f"wrote {out}")
    if args.accuracy:
        acc_out = Path(args.acc_out) if args.acc_out else ACCURACY_JSON
        accuracy_runs(args.seeds, args.acc_world_size, args.epochs, args.hidden, args.layers,
                      args.lr, args.dropout, args.eval_every, work, acc_out, args.timeout,
                      precisions=tuple(args.precisions), merge=args.merge)
        print(f"wrote {acc_out}")
    default_out = not args.out and not args.acc_out
    if (args.measure or args.accuracy or args.plot_only) and not args.no_plot and default_out:
        print("\n".join(plot(*load_results())))
    if args.write_docs:
        written = write_docs()
        missing = [str(f) for f in DOC_FILES if str(f) not in written]
        print("wrote " + ", ".join(written) + (f"; missing (skipped): {missing}"
                                               if missing else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
