"""Compression of what crosses the network: final test accuracy against total bytes sent.

    python benchmarks/compression.py --full     # the issue's setup (hours on a large machine)
    python benchmarks/compression.py --quick    # reduced check: few epochs, one seed
    python benchmarks/compression.py --small    # every method, 300 epochs, 3 seeds, on CiteSeer
    python benchmarks/compression.py --plot-only benchmarks/results/compression_quick.json

Setup (``--full``): WordNet 3.0 (117,659 synsets, 45 classes; 4 ranks, METIS and random
partitions) and the dense SBM (120k nodes, 1.1M edges, 80% across communities; 4 ranks, METIS);
VARCO's model (3-layer GraphSAGE, hidden 256, Adam lr 1e-2) and a 3-layer GAT (4 heads x 32);
mode ``sar``; 300 epochs; seeds 0, 1, 2. Methods (as VARCO, the last layer's input is never
compressed, :func:`pyg_sar.compression.all_but_last`):

* ``full``: no compression;
* ``trunc-R`` (R = 2, 4, 8, 16, 32): fixed channel truncation (VARCO's fixed baseline);
* ``quant-B`` (B = 8, 4, 2 bits): fixed stochastic-rounding quantisation;
* variable schemes, all ending lossless: ``varco`` (VARCO's linear schedule, r_max 128, slope 5,
  ending at ratio 1 instead of the paper's 1.5), and decays over the whole run (decay steps =
  epochs) from 128 to 1: ``trunc-linear``, ``trunc-exp``, ``trunc-step`` (4 stages),
  ``subset-exp`` (random channel subsets); ``quant-exp``: bits from 2 to 32 (ratio 16 to 1).

Every (workload, model, seed) is one ``mpiexec -n 4`` launch (``rank_run``) training every
method in turn with the public API, so a rank's start-up is paid once. Measured per method:
test accuracy after the last epoch (evaluation never compresses), test accuracy at the best
validation epoch, the bytes every rank handed to the communicator in the training steps
(``comm.traffic``: rows, re-fetched rows, gradients), the median epoch time after 2 warm-up
epochs, and the time spent in the codec (encode + decode, timed around the codec calls).
Output: ``benchmarks/results/compression_<quick|full>.json``, a plot of accuracy against
bytes relative to full communication per (workload, model) in
``benchmarks/results/plots/``, and a markdown table next to the JSON, with the issue's goal
checked as measured: the best variable scheme within 0.3 points of full communication (mean
over seeds) while sending at most 30% of its bytes, and above every fixed scheme at equal
bytes (the fixed schemes' accuracy interpolated, in log bytes, at the variable scheme's bytes).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import pyg_sar  # noqa: E402
from pyg_sar.files import atomic_write  # noqa: E402

RESULTS = HERE / "results"
RANK_ENV = {"OMP_NUM_THREADS": "1"}
WORLD = 4

FIXED_TRUNC = [2, 4, 8, 16, 32]
FIXED_BITS = [8, 4, 2]
VARIABLE = ["varco", "trunc-linear", "trunc-exp", "trunc-step", "subset-exp", "quant-exp"]
METHODS = ["full", *[f"trunc-{r}" for r in FIXED_TRUNC], *[f"quant-{b}" for b in FIXED_BITS],
           *VARIABLE]


def workloads(suite: str) -> dict:
    """name -> (description, dataset factory, partition method)."""
    from pyg_sar.datasets import citeseer, sbm, sbm_dense, wordnet
    if suite == "small":  # the full schedule and seeds on a graph these 2 cores can train
        return {
            "citeseer-metis": ("CiteSeer (3,327 nodes), METIS", citeseer, "metis"),
            "citeseer-random": ("CiteSeer, random partition", citeseer, "random"),
        }
    if suite == "full":
        return {
            "wordnet-metis": ("WordNet 3.0, METIS", wordnet, "metis"),
            "wordnet-random": ("WordNet 3.0, random partition", wordnet, "random"),
            "sbm-dense": ("dense SBM, 120k nodes, 1.1M edges, METIS", sbm_dense, "metis"),
        }
    return {
        "wordnet-metis": ("WordNet 3.0, METIS", wordnet, "metis"),
        "sbm-dense-small": ("dense SBM, 20k nodes, 200k edges (80% across communities), METIS",
                            lambda: sbm(num_nodes=20_000, num_edges=200_000, num_classes=16,
                                        homophily=0.2, seed=0), "metis"),
    }


# ------------------------------------------------------------------------------ rank side
def make_spec(method: str, epochs: int):
    """``SARConfig.compression`` of ``method`` (``None`` for full communication)."""
    from pyg_sar.compression import (
        Compressor,
        Exponential,
        Linear,
        Quantize,
        RandomSubset,
        Step,
        Truncate,
        all_but_last,
        varco,
    )
    if method == "full":
        return None
    kind, _, arg = method.partition("-")
    if kind == "trunc" and arg.isdigit():
        comp = Compressor(Truncate(), float(arg))
    elif kind == "quant" and arg.isdigit():
        comp = Compressor(Quantize(), 32.0 / int(arg))
    elif method == "varco":
        comp = Compressor(Truncate(), varco(128.0, 1.0, 5.0, epochs))
    elif method == "trunc-linear":
        comp = Compressor(Truncate(), Linear(128.0, 1.0, epochs))
    elif method == "trunc-exp":
        comp = Compressor(Truncate(), Exponential(128.0, 1.0, epochs))
    elif method == "trunc-step":
        comp = Compressor(Truncate(), Step(128.0, 1.0, epochs, stages=4))
    elif method == "subset-exp":
        comp = Compressor(RandomSubset(), Exponential(128.0, 1.0, epochs))
    elif method == "quant-exp":
        comp = Compressor(Quantize(), Exponential(16.0, 1.0, epochs))
    else:
        raise ValueError(f"unknown method {method!r} (known: {', '.join(METHODS)})")
    return all_but_last(comp)


def build_model(name: str, in_channels: int, classes: int) -> torch.nn.Module:
    """VARCO's 3-layer GraphSAGE (hidden 256) or a 3-layer GAT (4 heads x 32)."""
    from torch_geometric.nn import GAT, GraphSAGE
    if name == "sage":
        return GraphSAGE(in_channels, 256, 3, classes, dropout=0.5)
    if name == "gat":
        return GAT(in_channels, 32 * 4, 3, classes, heads=4, dropout=0.5)
    raise ValueError(f"unknown model {name!r} (expected 'sage' or 'gat')")


class CodecTimer:
    """Seconds spent in the codecs' encode and decode (benchmark-only instrumentation)."""

    def __init__(self) -> None:
        from pyg_sar.compression import codecs
        self.seconds = 0.0
        self._saved = []
        for cls in (codecs.Truncate, codecs.RandomSubset, codecs.Quantize):
            for name in ("encode", "decode"):
                original = getattr(cls, name)
                self._saved.append((cls, name, original))
                setattr(cls, name, self._timed(original))

    def _timed(self, fn):
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t
        return wrapper

    def close(self) -> None:
        for cls, name, original in self._saved:
            setattr(cls, name, original)


def train_epoch(ctx, model, part, optimizer, compressors, timer: CodecTimer | None = None):
    """One timed full-batch training step (loss, compressor clocks advanced): returns
    ``(loss, step seconds, codec seconds)`` (codec seconds 0 without a ``timer``); the traffic
    ledger holds this step's bytes."""
    from pyg_sar.nn.functional import cross_entropy
    ctx.comm.barrier()
    ctx.comm.traffic.reset()
    if timer is not None:
        timer.seconds = 0.0
    t = time.perf_counter()
    model.train()
    optimizer.zero_grad()
    loss = cross_entropy(model(part.x, part.graph), part.y, part.train_mask)
    loss.backward()
    pyg_sar.all_reduce_gradients(model)
    optimizer.step()
    for comp in compressors:
        comp.step()
    return loss, time.perf_counter() - t, timer.seconds if timer is not None else 0.0


def evaluate(model, part) -> tuple[float, float]:
    """(val accuracy, test accuracy) with full rows (evaluation never compresses)."""
    from pyg_sar.nn.functional import accuracy
    model.eval()
    with torch.no_grad():
        out = model(part.x, part.graph)
    return accuracy(out, part.y, part.val_mask), accuracy(out, part.y, part.test_mask)


def slowest_medians(ctx, times: list, codec_s: list) -> dict:
    """``epoch_s`` and ``codec_s``: each rank's median after two warm-up steps (when there are
    more than 4), the slowest rank's."""
    def median(values):
        return statistics.median(values[2:] if len(values) > 4 else values)
    return {"epoch_s": max(ctx.comm.allgather_object(median(times))),
            "codec_s": max(ctx.comm.allgather_object(median(codec_s)))}


def train_one(ctx, part, model_name: str, method: str, seed: int, epochs: int,
              eval_every: int) -> dict:
    from pyg_sar.compression import compressors_of
    classes = int(part.meta.get("num_classes") or int(part.y.max()) + 1)
    torch.manual_seed(seed)
    model = build_model(model_name, part.x.shape[1], classes)
    pyg_sar.convert(model, pyg_sar.SARConfig(mode="sar", compression=make_spec(method, epochs)))
    pyg_sar.broadcast_parameters(model)
    torch.manual_seed(seed * 1000 + 1 + ctx.rank)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    compressors = list(compressors_of(model).values())
    times, codec_s, sent = [], [], 0
    best_val, test_at_best, test_acc = -1.0, float("nan"), float("nan")
    timer = CodecTimer()
    try:
        for epoch in range(1, epochs + 1):
            loss, seconds, codec_seconds = train_epoch(ctx, model, part, optimizer,
                                                       compressors, timer)
            times.append(seconds)
            codec_s.append(codec_seconds)
            sent += ctx.comm.traffic.totals()["sent"]
            if epoch % eval_every == 0 or epoch == epochs:
                val_acc, test_acc = evaluate(model, part)
                if val_acc > best_val:
                    best_val, test_at_best = val_acc, test_acc
    finally:
        timer.close()
    return {"final_test_acc": test_acc, "test_acc_at_best_val": test_at_best,
            "best_val_acc": best_val, "bytes_sent": sum(ctx.comm.allgather_object(sent)),
            **slowest_medians(ctx, times, codec_s),
            "final_loss": float(loss.detach())}


def rank_run(ctx, parts: str, model: str, methods: list, seed: int, epochs: int,
             eval_every: int) -> dict:
    """Every method on this (workload, model, seed): one launch (see the module docstring)."""
    torch.set_num_threads(1)
    part = pyg_sar.load_partition(parts, ctx.rank, world_size=ctx.world_size)
    out = {}
    for method in methods:
        t = time.perf_counter()
        out[method] = train_one(ctx, part, model, method, seed, epochs, eval_every)
        out[method]["wall_s"] = time.perf_counter() - t
        if ctx.rank == 0:
            r = out[method]
            print(f"  {model} seed {seed} {method:>13}: test {r['final_test_acc']:.4f}  "
                  f"{r['bytes_sent'] / 1e6:9.1f} MB  {r['epoch_s']:.3f} s/epoch", flush=True)
    return out


# ---------------------------------------------------------------------------- driver side
def run(args: argparse.Namespace) -> dict:
    from pyg_sar.testing import run_on_ranks
    suite = "full" if args.full else "small" if args.small else "quick"
    loads = workloads(suite)
    if args.workloads:
        loads = {k: v for k, v in loads.items() if k in args.workloads.split(",")}
    models = args.models.split(",")
    methods = args.methods.split(",") if args.methods else METHODS
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise SystemExit(f"unknown methods {unknown} (known: {', '.join(METHODS)})")
    out_path = Path(args.out or RESULTS / f"compression_{suite}.json")
    result = {"suite": suite, "world_size": WORLD, "epochs": args.epochs, "seeds": args.seeds,
              "methods": methods, "models": models, "mode": "sar", "cores": os.cpu_count(),
              "workloads": {k: v[0] for k, v in loads.items()}, "runs": []}
    work = Path(args.work)
    for name, (_, factory, method) in loads.items():
        parts = work / f"{name}-{WORLD}"
        if not (parts / "meta.json").exists():
            print(f"partitioning {name} into {WORLD} parts ({method})", flush=True)
            pyg_sar.partition_graph(factory(), WORLD, parts, method=method, seed=0,
                                    balance="nodes", overwrite=True)  # as the results were
        for model in models:
            for seed in range(args.seeds):
                print(f"{name} / {model} / seed {seed}: {len(methods)} methods, "
                      f"{args.epochs} epochs", flush=True)
                t = time.perf_counter()
                res = run_on_ranks(f"{Path(__file__).resolve()}:rank_run", WORLD,
                                   kwargs=dict(parts=str(parts), model=model, methods=methods,
                                               seed=seed, epochs=args.epochs,
                                               eval_every=args.eval_every),
                                   timeout=args.timeout, env=RANK_ENV)
                for method, r in res[0].items():
                    result["runs"].append(dict(workload=name, model=model, seed=seed,
                                               method=method, epochs=args.epochs, **r))
                print(f"  ({time.perf_counter() - t:.0f} s)", flush=True)
                result["summary"] = summarize(result["runs"])
                atomic_write(out_path, json.dumps(result, indent=1))  # partial runs kept
    result["summary"] = summarize(result["runs"])
    atomic_write(out_path, json.dumps(result, indent=1))
    report(result, out_path)
    return result


# --------------------------------------------------------------------------------- report
def summarize(runs: list[dict]) -> list[dict]:
    """Mean (and spread) over seeds per (workload, model, method); bytes relative to ``full``
    of the same seed."""
    full = {(r["workload"], r["model"], r["seed"]): r["bytes_sent"] for r in runs
            if r["method"] == "full"}
    groups: dict[tuple, list[dict]] = {}
    for r in runs:
        groups.setdefault((r["workload"], r["model"], r["method"]), []).append(r)
    out = []
    for (workload, model, method), rs in groups.items():
        epochs = sorted({r.get("epochs") for r in rs}, key=str)
        rel = [r["bytes_sent"] / full[(workload, model, r["seed"])] for r in rs
               if (workload, model, r["seed"]) in full]
        accs = [r["final_test_acc"] for r in rs]
        out.append(dict(
            workload=workload, model=model, method=method, seeds=len(rs),
            epochs=epochs[0] if len(epochs) == 1 else epochs,
            acc_mean=statistics.mean(accs), acc_std=statistics.pstdev(accs),
            acc_best_val_mean=statistics.mean(r["test_acc_at_best_val"] for r in rs),
            bytes_mean=statistics.mean(r["bytes_sent"] for r in rs),
            bytes_rel=statistics.mean(rel) if rel else float("nan"),
            epoch_s=statistics.median(r["epoch_s"] for r in rs),
            codec_s=statistics.median(r["codec_s"] for r in rs)))
    return out


FIXED_FAMILIES = {"fixed truncation": "trunc-", "fixed quantisation": "quant-",
                  "fixed quantisation, every layer": "quantall-"}


def _is_fixed(method: str, prefix: str) -> bool:
    return method.startswith(prefix) and method[len(prefix):].isdigit()


def fixed_at(rows: list[dict], x: float) -> float:
    """The best fixed scheme's accuracy at relative bytes ``x``: per family (truncation,
    quantisation), linear in log bytes between its two neighbouring points, the full-
    communication point closing each curve at 1; a family is left out where ``x`` is below
    its fewest bytes. NaN if no family reaches down to ``x``."""
    full = next(s for s in rows if s["method"] == "full")
    best = float("nan")
    for prefix in FIXED_FAMILIES.values():
        pts = sorted([(s["bytes_rel"], s["acc_mean"]) for s in rows
                      if _is_fixed(s["method"], prefix)] + [(1.0, full["acc_mean"])])
        if len(pts) < 2 or x < pts[0][0]:
            continue
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if x0 <= x <= x1:
                w = 0.0 if x1 == x0 else (math.log(x / x0) / math.log(x1 / x0))
                value = y0 + w * (y1 - y0)
                best = value if math.isnan(best) else max(best, value)
                break
    return best


def goals(summary: list[dict]) -> list[str]:
    """The issue's goal per (workload, model), as measured."""
    lines = []
    for workload, model in sorted({(s["workload"], s["model"]) for s in summary}):
        rows = [s for s in summary if s["workload"] == workload and s["model"] == model]
        full = next((s for s in rows if s["method"] == "full"), None)
        variable = [s for s in rows if s["method"] in VARIABLE]
        if full is None or not variable:
            continue
        for s in variable:
            s["fixed_acc_at_bytes"] = fixed_at(rows, s["bytes_rel"])
        within = [s for s in variable if s["bytes_rel"] <= 0.30]
        where = f"* {workload} / {model}: "
        if not within:
            least = min(s["bytes_rel"] for s in variable) * 100
            lines.append(where + f"no variable scheme sent <= 30% of full's bytes (least: "
                                 f"{least:.1f}%). Goal: **missed**.")
            continue
        best = max(within, key=lambda s: s["acc_mean"])
        gap = (full["acc_mean"] - best["acc_mean"]) * 100
        fixed = best["fixed_acc_at_bytes"]
        beats = math.isnan(fixed) or best["acc_mean"] > fixed
        fixed_text = ("no fixed scheme sends so few bytes" if math.isnan(fixed) else
                      f"best fixed scheme at those bytes {fixed:.4f}")
        met = gap <= 0.3 and beats
        lines.append(where + f"best variable scheme within 30% of the bytes: **{best['method']}"
                             f"** at {best['bytes_rel'] * 100:.1f}% of the bytes, test "
                             f"{best['acc_mean']:.4f} vs full {full['acc_mean']:.4f} "
                             f"({-gap:+.2f} points vs full); {fixed_text}. Goal (<= 0.3 "
                             f"points below full, "
                             f"<= 30% of the bytes, above every fixed scheme at equal bytes): "
                             f"**{'met' if met else 'missed'}**.")
    return lines


def table(result: dict) -> str:
    order = {m: i for i, m in enumerate(METHODS)}
    out = [f"Setup: {result['world_size']} ranks, mode {result['mode']}, "
           f"{result.get('cores')} cores on the machine; test accuracy after the last epoch, "
           f"mean over seeds.",
           "", "| workload | model | method | epochs | seeds | test acc (mean ± sd) | "
           "bytes vs full | bytes (mean) | best fixed at equal bytes | epoch time (median) | "
           "codec time / epoch |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = sorted(result["summary"], key=lambda s: (s["workload"], s["model"],
                                                    order.get(s["method"], 99)))
    for s in rows:
        fixed = s.get("fixed_acc_at_bytes")
        fixed = "" if fixed is None else "—" if math.isnan(fixed) else f"{fixed:.4f}"
        out.append(f"| {s['workload']} | {s['model']} | {s['method']} | {s.get('epochs')} | "
                   f"{s['seeds']} | {s['acc_mean']:.4f} ± "
                   f"{s['acc_std']:.4f} | {s['bytes_rel'] * 100:.1f}% | "
                   f"{s['bytes_mean'] / 1e9:.3f} GB | {fixed} | {s['epoch_s']:.3f} s | "
                   f"{s['codec_s'] * 1e3:.1f} ms |")
    return "\n".join(out)


def plot(result: dict, stem: str) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    made = []
    summary = result["summary"]
    for workload, model in sorted({(s["workload"], s["model"]) for s in summary}):
        rows = [s for s in summary if s["workload"] == workload and s["model"] == model]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for label, prefix in FIXED_FAMILIES.items():
            pts = sorted((s["bytes_rel"], s["acc_mean"]) for s in rows
                         if _is_fixed(s["method"], prefix))
            if pts:
                ax.plot(*zip(*pts), marker="o", label=label)
        for s in rows:
            if s["method"] in VARIABLE or s["method"] == "full":
                ax.errorbar(s["bytes_rel"], s["acc_mean"], yerr=s["acc_std"],
                            marker="*" if s["method"] != "full" else "s", linestyle="none",
                            markersize=10, label=s["method"])
        ax.set_xscale("log")
        ax.set_xlabel("bytes sent in training, relative to full communication")
        ax.set_ylabel("final test accuracy (mean over seeds)")
        epochs = sorted({str(s.get("epochs")) for s in rows})
        ax.set_title(f"{workload} / {model} ({', '.join(epochs)} epochs, "
                     f"{max(s['seeds'] for s in rows)} seed(s))")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        path = RESULTS / "plots" / f"{stem}_{workload}_{model}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        made.append(path)
    return made


def report(result: dict, out_path: Path) -> None:
    lines = goals(result["summary"])  # also fills fixed_acc_at_bytes for the table
    text = table(result) + "\n\nGoal, as measured:\n\n" + "\n".join(lines) + "\n"
    md = out_path.with_suffix(".md")
    md.write_text(text)
    plots = plot(result, out_path.stem)
    print(text)
    print(f"wrote {out_path}, {md} and {len(plots)} plot(s)")


# ---------------------------------------------------------------------- the real suite
# ``--suite real``: WordNet and CiteSeer with their features reduced to 64 standardised SVD
# components (load_dataset(..., svd_dim=64), a frozen input projection chosen for compute), a
# 3-layer GraphSAGE (hidden 32) or GAT (4 heads x 8), P = 2 or 4, METIS or random partitions.
# Every finished run is written to the JSON at once (by rank 0, atomically), so an interrupted
# queue loses at most the run in progress; ``--skip-existing`` reuses finished runs (runs are
# bitwise deterministic).
SVD_DIM = 64
HIDDEN = 32
REAL_METHODS = ["full", "bf16", "trunc-4", "trunc-16", "quant-8", "quant-4", "quantall-8",
                "quantall-4", "quantall-2", "trunc-exp",
                "frac-trunc", "quant-stages", "auto"]
REAL_EXTRAS = ["frac-subset-ef", "quant-stages-ef-nolastfloor", "varco", "auto-2bit"]
# The earlier auto preset (the inner layers' ladder from 2 bits), run as ``auto-2bit``.
AUTO_2BIT = {"bits": (2, 4, 8), "ends": (0.45, 0.80, 0.95)}
REAL_VARIABLE = ["trunc-exp", "frac-trunc", "quant-stages", "auto", *REAL_EXTRAS]
# lr and epochs per dataset, from the calibration runs (compression_real_calibration.json; the
# convergence rule: E = the first epoch at which full's val acc is within 0.3 points of its
# epoch-200 value). WordNet (svd 128, lr 0.02) reaches that only at ~160 epochs: E is capped at
# 100 by the time budget (val 69.2% there against 70.6% at 200), the same for every method.
REAL_TRAINING = {"wordnet": {"lr": 0.02, "epochs": 100}, "citeseer": {"lr": 0.01, "epochs": 100}}


def real_workloads() -> dict:
    """name -> (dataset, partition method, ranks, svd dim), e.g. ``wordnet-svd64-metis-p4``
    (svd 128: the fallback should 64 components lose too much accuracy)."""
    return {f"{d}-svd{k}-{m}-p{p}": (d, m, p, k) for k in (SVD_DIM, 2 * SVD_DIM)
            for d in ("wordnet", "citeseer") for m in ("metis", "random") for p in (4, 2)}


def real_partitions(work: Path, name: str) -> Path:
    """The cached partition of a real workload (made on first use: METIS seed 0)."""
    dataset, method, world, dim = real_workloads()[name]
    parts = work / f"{dataset}-svd{dim}-{method}-{world}"
    if not (parts / "meta.json").exists():
        print(f"partitioning {dataset} (svd {dim}) into {world} parts ({method})", flush=True)
        from pyg_sar.datasets import load_dataset
        data = load_dataset(dataset, svd_dim=dim)
        # Node balance pinned: the results were made with it (the default is edges at P >= 4).
        pyg_sar.partition_graph(data, world, parts, method=method, seed=0, balance="nodes",
                                overwrite=True)
    return parts


def make_real_spec(method: str, epochs: int, seed: int):
    """``(compression, wire_dtype)`` of a real-suite method; the compressors use ``seed``."""
    from pyg_sar import compression as c
    if method == "full":
        return None, None
    if method == "bf16":
        return None, torch.bfloat16
    kind, _, arg = method.partition("-")
    frac = c.KeepFraction(1 / 32, 1.0, epochs, power=3.0)
    stages = c.bit_stages((2, 4, 8), (0.35, 0.65, 0.95), epochs)
    if kind == "trunc" and arg.isdigit():  # fixed, all but the last layer (as the old suites)
        return c.all_but_last(c.Compressor(c.Truncate(), float(arg), seed=seed)), None
    if kind == "quant" and arg.isdigit():
        return c.all_but_last(c.Compressor(c.Quantize(), 32.0 / int(arg), seed=seed)), None
    if kind == "quantall" and arg.isdigit():  # fixed, every layer (as auto): equal-bytes points
        return c.Compressor(c.Quantize(), 32.0 / int(arg), seed=seed), None
    if method == "trunc-exp":
        return c.all_but_last(c.Compressor(c.Truncate(), c.Exponential(128.0, 1.0, epochs),
                                           seed=seed)), None
    if method == "varco":
        return c.all_but_last(c.Compressor(c.Truncate(), c.varco(128.0, 1.0, 5.0, epochs),
                                           seed=seed)), None
    if method == "frac-trunc":  # every layer
        return c.Compressor(c.Truncate(), frac, seed=seed), None
    if method == "frac-subset-ef":
        return c.Compressor(c.RandomSubset(), frac, seed=seed, error_feedback="both"), None
    if method == "quant-stages":
        return c.Compressor(c.Quantize(), stages, seed=seed), None
    if method == "quant-stages-ef-nolastfloor":
        return c.Compressor(c.Quantize(), stages, seed=seed, error_feedback="both"), None
    if method == "auto":
        from pyg_sar.compression.presets import auto
        return auto(epochs, seed=seed), None
    if method == "auto-2bit":  # the earlier preset: inner layers from 2 bits (AUTO_2BIT)
        from pyg_sar.compression.presets import auto
        return auto(epochs, seed=seed, **AUTO_2BIT), None
    raise ValueError(f"unknown method {method!r} (known: {', '.join(REAL_METHODS + REAL_EXTRAS)})")


def build_real_model(name: str, in_channels: int, classes: int) -> torch.nn.Module:
    """3-layer GraphSAGE (hidden 32) or GAT (4 heads x 8) on the SVD features."""
    from torch_geometric.nn import GAT, GraphSAGE
    if name == "sage":
        return GraphSAGE(in_channels, HIDDEN, 3, classes, dropout=0.5)
    if name == "gat":
        return GAT(in_channels, HIDDEN, 3, classes, heads=4, dropout=0.5)
    raise ValueError(f"unknown model {name!r} (expected 'sage' or 'gat')")


def _spec_record(model, spec) -> dict:
    from pyg_sar.compression import compressors_of
    out = {"layers": {name: comp.describe() for name, comp in compressors_of(model).items()}}
    if hasattr(spec, "describe"):
        out["preset"] = spec.describe()
    return out


def train_real(ctx, part, model_name: str, method: str, seed: int, epochs: int, lr: float,
               eval_every: int) -> dict:
    """One method: the run's row (the same on every rank)."""
    from pyg_sar.compression import compressors_of
    from pyg_sar.distributed.traffic import merge
    classes = int(part.meta.get("num_classes") or int(part.y.max()) + 1)
    torch.manual_seed(seed)
    model = build_real_model(model_name, part.x.shape[1], classes)
    spec, wire_dtype = make_real_spec(method, epochs, seed)
    pyg_sar.convert(model, pyg_sar.SARConfig(mode="sar", compression=spec, wire_dtype=wire_dtype))
    pyg_sar.broadcast_parameters(model)
    torch.manual_seed(seed * 1000 + 1 + ctx.rank)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    compressors = list(compressors_of(model).values())
    times, codec_s, ledgers, curve = [], [], [], []
    best = {"val": -1.0, "test": float("nan"), "epoch": 0}
    test_acc = float("nan")
    timer = CodecTimer()
    try:
        for epoch in range(1, epochs + 1):
            loss, seconds, codec_seconds = train_epoch(ctx, model, part, optimizer,
                                                       compressors, timer)
            times.append(seconds)
            codec_s.append(codec_seconds)
            ledgers.append(ctx.comm.traffic.as_dict())
            if epoch % eval_every == 0 or epoch == epochs:
                val_acc, test_acc = evaluate(model, part)
                curve.append([epoch, val_acc, test_acc, float(loss.detach())])
                if val_acc > best["val"]:
                    best = {"val": val_acc, "test": test_acc, "epoch": epoch}
    finally:
        timer.close()
    traffic = merge(ctx.comm.allgather_object(merge(ledgers)))  # all ranks, all epochs
    sent = sum(v["sent"] for dirs in traffic.values() for v in dirs.values())
    return {"final_test_acc": test_acc, "test_acc_at_best_val": best["test"],
            "best_val_acc": best["val"], "best_val_epoch": best["epoch"],
            "bytes_sent": sent,
            "bytes_by_layer": {layer: {d: v["sent"] for d, v in dirs.items()}
                               for layer, dirs in traffic.items()},
            **slowest_medians(ctx, times, codec_s),
            "final_loss": float(loss.detach()), "curve": curve,
            "spec": _spec_record(model, spec),
            "wire_dtype": None if wire_dtype is None else str(wire_dtype)}


def _run_key(r: dict) -> tuple:
    return (r["workload"], r["model"], r["seed"], r["method"], r["epochs"], r["lr"],
            r["eval_every"])


def persist_run(out_path: str, row: dict, setup: dict) -> None:
    """Add ``row`` to the JSON at ``out_path`` (replacing a run with its key), atomically,
    under an exclusive lock (rank 0 after every finished run)."""
    import fcntl
    path = Path(out_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    import tempfile
    with open(Path(tempfile.gettempdir()) / f"pyg_sar_{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = json.loads(path.read_text()) if path.exists() else {"runs": []}
        result.update(setup)  # the newest setup (workload table) over an older file's
        old = [r for r in result["runs"] if _run_key(r) == _run_key(row)]
        # A rerun with other parameters (auto's preset changed): the old row is kept aside.
        result.setdefault("superseded", []).extend(r for r in old if r.get("spec") != row["spec"])
        result["runs"] = [r for r in result["runs"] if _run_key(r) != _run_key(row)] + [row]
        result["summary"] = summarize_real(result["runs"])
        atomic_write(path, json.dumps(result, indent=1))


def rank_run_real(ctx, parts: str, base: dict, methods: list, out: str, setup: dict) -> dict:
    """Every method of one (workload, model, seed) in one launch; each run saved when done."""
    torch.set_num_threads(1)
    part = pyg_sar.load_partition(parts, ctx.rank, world_size=ctx.world_size)
    done = {}
    for method in methods:
        t = time.perf_counter()
        r = train_real(ctx, part, base["model"], method, base["seed"], base["epochs"],
                       base["lr"], base["eval_every"])
        r["wall_s"] = time.perf_counter() - t
        if ctx.rank == 0:
            persist_run(out, {**base, "method": method, **r}, setup)
            print(f"  {base['workload']} {base['model']} seed {base['seed']} {method:>14}: "
                  f"test {r['final_test_acc']:.4f} (best val {r['best_val_acc']:.4f} @"
                  f"{r['best_val_epoch']})  {r['bytes_sent'] / 1e6:8.1f} MB  "
                  f"{r['epoch_s']:.3f} s/epoch  {r['wall_s']:.0f} s", flush=True)
        done[method] = r["final_test_acc"]
    return done


def summarize_real(runs: list[dict]) -> list[dict]:
    """:func:`summarize` plus the paired per-seed delta to ``full`` (points) and its sd."""
    out = summarize(runs)
    full = {(r["workload"], r["model"], r["seed"]): r["final_test_acc"] for r in runs
            if r["method"] == "full"}
    for s in out:
        deltas = [(r["final_test_acc"] - full[(r["workload"], r["model"], r["seed"])]) * 100
                  for r in runs if (r["workload"], r["model"], r["method"]) ==
                  (s["workload"], s["model"], s["method"])
                  and (r["workload"], r["model"], r["seed"]) in full]
        s["delta_pts"] = deltas
        s["delta_mean"] = statistics.mean(deltas) if deltas else float("nan")
        s["delta_sd"] = statistics.pstdev(deltas) if len(deltas) > 1 else float("nan")
        mine = [r for r in runs if (r["workload"], r["model"], r["method"]) ==
                (s["workload"], s["model"], s["method"])]
        s["lr"] = sorted({r["lr"] for r in mine})
        s["seed_list"] = sorted(r["seed"] for r in mine)
        paired = [full[(r["workload"], r["model"], r["seed"])] for r in mine
                  if (r["workload"], r["model"], r["seed"]) in full]
        s["full_acc_same_seeds"] = statistics.mean(paired) if paired else float("nan")
    return out


# Preset parameters that change no byte of a model: GraphSAGE sends no ``exact`` tensors, so
# ``logit_dtype`` leaves its runs bit for bit as they were (checked by rerunning one).
NO_EFFECT = {"sage": ("logit_dtype",)}


def _stale_auto(row: dict) -> bool:
    """Whether ``row`` is an ``auto`` run made with other parameters than the preset's now
    (parameters that cannot change the model's run, :data:`NO_EFFECT`, aside)."""
    if row["method"] != "auto":
        return False
    from pyg_sar.compression.presets import auto
    now = json.loads(json.dumps(auto(row["epochs"], seed=row["seed"]).describe()))
    then = dict(row.get("spec", {}).get("preset") or {})
    for k in NO_EFFECT.get(row["model"], ()):
        then.pop(k, None)
        now.pop(k, None)
    return then != now


def run_real(args: argparse.Namespace) -> None:
    from pyg_sar.testing import run_on_ranks
    loads = real_workloads()
    names = args.workloads.split(",") if args.workloads else list(loads)
    methods = args.methods.split(",") if args.methods else REAL_METHODS
    bad = [n for n in names if n not in loads] + \
        [m for m in methods if m not in REAL_METHODS + REAL_EXTRAS]
    if bad:
        raise SystemExit(f"unknown workloads/methods {bad} (workloads: {', '.join(loads)}; "
                         f"methods: {', '.join(REAL_METHODS + REAL_EXTRAS)})")
    seeds = ([int(v) for v in args.seed_list.split(",")] if args.seed_list
             else list(range(args.seeds or 3)))
    out_path = Path(args.out or RESULTS / "compression_real.json")
    existing = set()
    if args.skip_existing and out_path.exists():
        existing = {_run_key(r) for r in json.loads(out_path.read_text())["runs"]
                    if not _stale_auto(r)}
    setup = {"suite": "real", "mode": "sar", "cores": os.cpu_count(),
             "models": {"sage": f"GraphSAGE(svd_dim, {HIDDEN}, 3, C, dropout=0.5)",
                        "gat": f"GAT(svd_dim, {HIDDEN}, 3, C, heads=4, dropout=0.5)"},
             "optimizer": "Adam", "split_seed": 0, "partition_seed": 0,
             "features": "standardised truncated SVD of x, svd_dim components "
                         "(pyg_sar.datasets.reduced.svd_features)",
             "workloads": {k: dict(zip(("dataset", "partition", "ranks", "svd_dim"), v))
                           for k, v in loads.items()}}
    work = Path(args.work)
    for name in names:
        dataset, _, world, _ = loads[name]
        train = dict(REAL_TRAINING[dataset])
        train.update({k: v for k, v in (("lr", args.lr), ("epochs", args.epochs)) if v})
        parts = real_partitions(work, name)
        for model in args.models.split(","):
            for seed in seeds:
                base = dict(workload=name, dataset=dataset, world_size=world, model=model,
                            seed=seed, epochs=train["epochs"], lr=train["lr"],
                            eval_every=args.eval_every)
                todo = [m for m in methods if _run_key({**base, "method": m}) not in existing]
                if not todo:
                    print(f"{name} / {model} / seed {seed}: all {len(methods)} done", flush=True)
                    continue
                print(f"{name} / {model} / seed {seed}: {', '.join(todo)} ({train['epochs']} "
                      f"epochs, lr {train['lr']})", flush=True)
                t = time.perf_counter()
                run_on_ranks(f"{Path(__file__).resolve()}:rank_run_real", world,
                             kwargs=dict(parts=str(parts), base=base, methods=todo,
                                         out=str(out_path), setup=setup),
                             timeout=args.timeout, env=RANK_ENV)
                print(f"  ({time.perf_counter() - t:.0f} s)", flush=True)
                if not args.no_report:
                    report_real(out_path, plots=False)
    if not args.no_report and out_path.exists():
        report_real(out_path, plots=not args.no_plots)


CALIBRATION = RESULTS / "compression_real_calibration.json"
GOAL_BYTES, GOAL_PTS = 0.30, 0.5


def converged_epoch(curve: list, tol_pts: float = 0.3) -> int:
    """The convergence rule: the first evaluated epoch whose val acc is within ``tol_pts``
    points of the last evaluation's."""
    last = curve[-1][1]
    return next(e for e, val, *_ in curve if abs(val - last) * 100 <= tol_pts)


def calibration_lines(path: Path = CALIBRATION) -> list[str]:
    """The calibration runs (full, seed 0, 200 epochs, eval every 5) and the rule's E."""
    if not path.exists():
        return []
    out = ["Calibration (full communication, seed 0, val/test every 5 epochs; E = the first "
           "epoch at which val acc is within 0.3 points of its last value):", "",
           "| workload | model | lr | epochs | val (last) | test (last) | E by the rule | "
           "test at E | epoch time |", "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(json.loads(path.read_text())["runs"], key=_run_key):
        e = converged_epoch(r["curve"])
        at_e = next(c for c in r["curve"] if c[0] == e)
        out.append(f"| {r['workload']} | {r['model']} | {r['lr']} | {r['epochs']} | "
                   f"{r['curve'][-1][1]:.4f} | {r['final_test_acc']:.4f} | {e} | "
                   f"{at_e[2]:.4f} | {r['epoch_s']:.3f} s |")
    return out + [""]


def _fixed_compare(rows: list[dict], s: dict) -> tuple[float, str]:
    """(best fixed acc at ``s``'s bytes or NaN, a verdict): where no fixed scheme sends so few
    bytes, ``s`` is compared with the most accurate fixed scheme (all of them send more)."""
    fixed_acc = fixed_at(rows, s["bytes_rel"])
    if not math.isnan(fixed_acc):
        return fixed_acc, "yes" if s["acc_mean"] > fixed_acc else "no"
    fixed = [r for r in rows if any(_is_fixed(r["method"], p) for p in FIXED_FAMILIES.values())]
    if not fixed:
        return fixed_acc, "no fixed runs"
    top = max(fixed, key=lambda r: r["acc_mean"])
    return fixed_acc, (f"{'yes, above' if s['acc_mean'] > top['acc_mean'] else 'no, below'} "
                       f"the best fixed, {top['method']} ({top['acc_mean']:.4f} at "
                       f"{top['bytes_rel'] * 100:.1f}%); no fixed scheme sends as few bytes")


def _params(rs: list[dict]) -> str:
    texts = sorted({json.dumps(r["spec"].get("preset") or r["spec"]["layers"], sort_keys=True)
                    for r in rs if r.get("spec")})
    return "; ".join(texts) if texts else ""


def real_tables(result: dict) -> list[str]:
    order = {m: i for i, m in enumerate(REAL_METHODS + [RAW_LOGITS] + REAL_EXTRAS)}
    summary, runs, out = result["summary"], result["runs"], []
    for workload, model in sorted({(s["workload"], s["model"]) for s in summary}):
        rows = sorted([s for s in summary if (s["workload"], s["model"]) == (workload, model)],
                      key=lambda s: order.get(s["method"], 99))
        rs = [r for r in runs if (r["workload"], r["model"]) == (workload, model)]
        w = result["workloads"][workload]
        out += [f"### {workload} / {model}", "",
                f"{w['dataset']}, {w['partition']} partition, P = {w['ranks']}; epochs "
                f"{sorted({r['epochs'] for r in rs})}, lr {sorted({r['lr'] for r in rs})}, eval "
                f"every {sorted({r['eval_every'] for r in rs})} epochs; test acc after the last "
                f"epoch; bytes = every rank's training-step traffic (rows, refetch, grads), "
                f"relative to full of the same seed.", "",
                "| method | seeds | test acc (mean ± sd) | Δ vs full, paired (pts, mean ± sd) | "
                "test at best val | bytes vs full | best fixed at equal bytes | beats fixed? | "
                "epoch (median) | codec / epoch |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for s in rows:
            fixed_acc, verdict = (_fixed_compare(rows, s) if s["method"] in REAL_VARIABLE
                                  else (float("nan"), ""))
            s["fixed_acc_at_bytes"], s["beats_fixed"] = fixed_acc, verdict
            sd = "" if math.isnan(s["delta_sd"]) else f" ± {s['delta_sd']:.2f}"
            out.append(f"| {s['method']} | {s['seeds']} | {s['acc_mean']:.4f} ± "
                       f"{s['acc_std']:.4f} | {s['delta_mean']:+.2f}{sd} | "
                       f"{s['acc_best_val_mean']:.4f} | {s['bytes_rel'] * 100:.1f}% | "
                       f"{'—' if math.isnan(fixed_acc) else f'{fixed_acc:.4f}'} | {verdict} | "
                       f"{s['epoch_s']:.3f} s | {s['codec_s'] * 1e3:.1f} ms |")
        auto_params = _params([r for r in rs if r["method"] == "auto"])
        if auto_params:
            out += ["", f"auto's parameters in these runs: `{auto_params}`"]
        out.append("")
    return out


def real_goals(result: dict) -> list[str]:
    """The issue's goal as measured, from the summary (after :func:`real_tables`)."""
    out = ["## Goal, as measured", ""]
    summary = result["summary"]
    key = {(s["workload"], s["model"], s["method"]): s for s in summary}
    pairs = sorted({(s["workload"], s["model"]) for s in summary},
                   key=lambda p: (not (p[0].startswith("wordnet") and p[0].endswith("p4")
                                       and p[1] == "sage"), p))
    for workload, model in pairs:
        full, auto = key.get((workload, model, "full")), key.get((workload, model, "auto"))
        head = f"* **{workload} / {model}**: "
        if full is None or auto is None:
            out.append(head + "auto or full not run yet.")
            continue
        bytes_ok = auto["bytes_rel"] <= GOAL_BYTES
        # Judged on the paired per-seed deltas (the seeds both have), not on two means that
        # may cover different seed sets.
        acc_ok = auto["delta_mean"] >= -GOAL_PTS
        deltas = ", ".join(f"{d:+.2f}" for d in auto["delta_pts"])
        sd = "" if math.isnan(auto["delta_sd"]) else f" ± {auto['delta_sd']:.2f}"
        out.append(head + f"auto sends {auto['bytes_rel'] * 100:.1f}% of full's bytes "
                   f"({'<=' if bytes_ok else '>'} 30%: {'met' if bytes_ok else 'missed'}); "
                   f"test {auto['acc_mean']:.4f} vs full {auto['full_acc_same_seeds']:.4f} on "
                   f"the same seeds (auto seeds {auto['seed_list']}, full seeds "
                   f"{full['seed_list']}); paired deltas [{deltas}] pts, mean "
                   f"{auto['delta_mean']:+.2f}{sd} (>= -0.5: {'met' if acc_ok else 'missed'}).")
    out += ["", "Variable against fixed at equal bytes (mean accuracies over each method's own "
            "seeds, see the tables' seeds column; fixed curves interpolated in log bytes; "
            "trunc-N and quant-N keep the last layer raw, so they send no less than ~33%; "
            "quantall-N compress every layer, as auto does):", ""]
    for workload, model in pairs:
        verdicts = [f"{s['method']}: {s['beats_fixed']}" for s in summary
                    if (s["workload"], s["model"]) == (workload, model)
                    and s["method"] in REAL_VARIABLE and s.get("beats_fixed")]
        if verdicts:
            out.append(f"* {workload} / {model}: " + "; ".join(verdicts))
    out += ["", "Epoch time at a limited link: measured by `benchmarks/network.py` "
            "(network_compression.md), not here; the epoch times above are on one machine's "
            "shared memory, where compression cannot pay.", ""]
    return out


def plot_real(result: dict, stem: str, folder: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    made = []
    summary = result["summary"]
    for workload, model in sorted({(s["workload"], s["model"]) for s in summary}):
        rows = [s for s in summary if (s["workload"], s["model"]) == (workload, model)]
        full = next((s for s in rows if s["method"] == "full"), None)
        fig, ax = plt.subplots(figsize=(7, 4.5))
        if full is not None:
            ax.axhspan((full["acc_mean"] - 0.005), full["acc_mean"] + 0.005, color="grey",
                       alpha=0.2, label="full ± 0.5 pt")
        ax.axvline(GOAL_BYTES, color="red", linestyle=":", label="30% of the bytes")
        for label, prefix in FIXED_FAMILIES.items():
            pts = sorted((s["bytes_rel"], s["acc_mean"], s["acc_std"]) for s in rows
                         if _is_fixed(s["method"], prefix))
            if pts:
                if full is not None:
                    pts.append((1.0, full["acc_mean"], full["acc_std"]))
                xs, ys, es = zip(*pts)
                ax.errorbar(xs, ys, yerr=es, marker="o", label=label, capsize=3)
        for s in rows:
            if s["method"] in REAL_VARIABLE or s["method"] in ("full", "bf16", RAW_LOGITS):
                ax.errorbar(s["bytes_rel"], s["acc_mean"], yerr=s["acc_std"], capsize=3,
                            marker={"full": "s", "bf16": "D"}.get(s["method"], "*"),
                            linestyle="none", markersize=10 if s["method"] == "auto" else 8,
                            label=s["method"])
        ax.set_xscale("log")
        ax.set_xlabel("bytes sent in training, relative to full communication")
        ax.set_ylabel("final test accuracy (mean ± sd over seeds)")
        ax.set_title(f"{workload} / {model} ({max(s['seeds'] for s in rows)} seed(s))")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        path = folder / f"{stem}_{workload}_{model}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(path)
    return made


RAW_LOGITS = "auto-2bit-fp32-logits"
"""The label of superseded GAT ``auto`` runs made before the preset sent the attention logits
as bf16 (the 2-bit preset, :data:`AUTO_2BIT`, otherwise): shown next to ``auto-2bit`` as the
before/after of that change."""


def _is_raw_logit_auto(r: dict) -> bool:
    """Whether ``r`` is a GAT run of the 2-bit preset (:data:`AUTO_2BIT`) but for
    ``logit_dtype`` (labelled ``auto`` when it was made)."""
    from pyg_sar.compression.presets import auto
    if r["method"] not in ("auto", "auto-2bit") or r["model"] != "gat":
        return False
    then = json.loads(json.dumps(auto(r["epochs"], seed=r["seed"], **AUTO_2BIT).describe()))
    then.pop("logit_dtype")
    return (r.get("spec") or {}).get("preset") == then


def _raw_logit_autos(result: dict) -> list[dict]:
    """The GAT auto runs whose preset is today's but for ``logit_dtype``, relabelled
    :data:`RAW_LOGITS`: the superseded ones (where the current run of the same key exists),
    and those not rerun yet, which leave ``result["runs"]`` (so ``auto`` holds only runs of
    today's preset)."""
    current = {_run_key(r) for r in result["runs"]}
    out = [{**r, "method": RAW_LOGITS} for r in result.get("superseded", [])
           if _run_key({**r, "method": "auto-2bit"}) in current and _is_raw_logit_auto(r)]
    out += [{**r, "method": RAW_LOGITS} for r in result["runs"] if _is_raw_logit_auto(r)]
    result["runs"] = [r for r in result["runs"] if not _is_raw_logit_auto(r)]
    return out


def report_real(path: Path, plots: bool = True) -> None:
    """``<path>.md`` (calibration, one table per (workload, model), the goal block) and, with
    ``plots`` and matplotlib importable, one plot per (workload, model), all from the JSON."""
    result = json.loads(path.read_text())
    before = _raw_logit_autos(result)
    result["runs"] = result["runs"] + before
    result["summary"] = summarize_real(result["runs"])
    made, note = [], ""
    if plots:
        try:
            made = plot_real(result, path.stem, path.parent / "plots")
        except ImportError:
            note = "(matplotlib is not importable here: no plots made)"
    counts = {}
    for r in result["runs"]:
        if r["method"] != RAW_LOGITS:
            counts[r["method"]] = counts.get(r["method"], 0) + 1
    text = "\n".join([
        f"# Compression on real graphs ({path.name})", "",
        f"Generated by `benchmarks/compression.py --suite real` from the JSON; "
        f"{sum(counts.values())} runs "
        f"({', '.join(f'{m} {n}' for m, n in sorted(counts.items()))}). Features: "
        f"{result.get('features')}; models {result.get('models')}; mode sar, Adam, split seed 0, "
        f"partition seed 0, {result.get('cores')} cores shared with other jobs."
        + (f" {len(result['superseded'])} earlier runs made with other parameters (auto "
           f"before its preset was frozen, and GAT's auto runs before the preset sent the "
           f"attention logits as bf16) are kept under `superseded` in the JSON."
           if result.get("superseded") else "")
        + (f" GAT's auto-2bit runs with float32 logits (that preset before it sent them as "
           f"bf16, otherwise the same) are shown as `{RAW_LOGITS}` ({len(before)} runs)."
           if before else "")
        + " `auto-2bit` is the earlier `auto` preset (inner layers from 2 bits: "
          f"`{json.dumps(AUTO_2BIT)}`), replaced by today's `auto` (from 4 bits) after the GAT "
          "random-partition cell.", "",
        *calibration_lines(), *real_tables(result), *real_goals(result), note])
    atomic_write(path.with_suffix(".md"), text + "\n")
    print(f"wrote {path.with_suffix('.md')}" + (f" and {len(made)} plot(s)" if made else ""))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    size = p.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true", help="the issue's setup")
    size.add_argument("--quick", action="store_true", help="reduced check (default)")
    size.add_argument("--small", action="store_true",
                      help="the full methods, epochs and seeds on CiteSeer")
    size.add_argument("--suite", choices=["real"], default=None,
                      help="real: WordNet/CiteSeer with 64 SVD features, SAGE/GAT hidden 32 "
                           "(see the real-suite section)")
    p.add_argument("--seed-list", default=None, help="real suite: comma-separated seeds")
    p.add_argument("--lr", type=float, default=None,
                   help="real suite: Adam lr (default: the calibrated one per dataset)")
    p.add_argument("--skip-existing", action="store_true",
                   help="real suite: reuse the runs already in --out (same key)")
    p.add_argument("--no-report", action="store_true")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--epochs", type=int, default=None, help="(full, small: 300; quick: 30)")
    p.add_argument("--seeds", type=int, default=None, help="(full, small: 3; quick: 1)")
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--models", default="sage,gat")
    p.add_argument("--methods", default=None, help="comma-separated subset of the methods")
    p.add_argument("--workloads", default=None, help="comma-separated subset")
    p.add_argument("--work", default=str(HERE / ".cache" / "compression"),
                   help="where the partitions are written")
    p.add_argument("--out", default=None)
    p.add_argument("--timeout", type=float, default=48 * 3600, help="per launch (hang detector)")
    p.add_argument("--plot-only", default=None, help="re-make table and plots from a JSON")
    p.add_argument("--merge", nargs="+", default=None,
                   help="merge the runs of several result JSONs into --out, then report")
    args = p.parse_args(argv)
    if args.merge:
        parts = [json.loads(Path(f).read_text()) for f in args.merge]
        result = {**parts[0], "runs": [r for part in parts for r in part["runs"]],
                  "workloads": {k: v for part in parts for k, v in part["workloads"].items()},
                  "merged_from": args.merge}
        result["summary"] = summarize(result["runs"])
        out = Path(args.out or RESULTS / "compression_quick.json")
        atomic_write(out, json.dumps(result, indent=1))
        report(result, out)
        return
    if args.suite == "real":
        if args.plot_only:
            report_real(Path(args.plot_only), plots=not args.no_plots)
            return
        args.models = args.models if args.models != "sage,gat" else "sage"
        run_real(args)
        return
    if args.plot_only:
        path = Path(args.plot_only)
        result = json.loads(path.read_text())
        result["summary"] = summarize(result["runs"])
        report(result, path)
        return
    args.epochs = args.epochs or (300 if args.full or args.small else 30)
    args.seeds = args.seeds or (3 if args.full or args.small else 1)
    run(args)


if __name__ == "__main__":
    main()
