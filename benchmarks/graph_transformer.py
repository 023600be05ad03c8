"""Graph transformers across ranks: memory per rank, step time and traffic of a GPS model
(softmax attention over every node, as a ring) and of SGFormer (linear attention), P = 1, 2, 4.

    python benchmarks/graph_transformer.py                      # both workloads, P = 1, 2, 4
    python benchmarks/graph_transformer.py --workloads gps --gps-nodes 6000
    python benchmarks/graph_transformer.py --report-only        # table + plot from the JSON

Workloads (float32, one thread per rank, METIS partitions):

* ``gps``: ``GPSConv`` x 2 (GINConv local message passing + 4-head ``MultiheadAttention`` over
  every node, batch norm), 64 channels, on a dense SBM (80% of edges across communities). The
  attention is quadratic in N: every step computes N^2 scores per head and layer.
* ``sgformer``: PyG's ``SGFormer`` (2 linear-attention layers of 4 heads x 64 channels + a
  3-layer GCN branch) on the dense SBM of the benchmark suite (120k nodes, 1.1M edges).

Modes: ``sar`` (pyg_sar's default; the ring re-fetches keys and values in backward), ``halo``
(every rank gathers all keys and values and runs dense attention with autograd) and ``pyg``
(plain PyG on the whole graph in one process, P = 1 only). Per rank, as ``benchmarks/suite.py``
measures them: ``peak_growth_mb`` (VmHWM after ``clear_refs`` minus VmRSS before a training
step, max over the measured steps; glibc returns freed blocks to the OS), ``saved_mb`` (unique
storages saved for backward during one forward), ``step_s`` (median of the measured steps after
warm-up) and the traffic ledger of one step (``comm.traffic``, by layer and direction) next to
the formula of ``pyg_sar/core/global_attention.py``: per attention layer and rank,
``(N - n_r) C b`` received (``rows``), the same again in mode sar (``refetch``) and
``(N - n_r) C b`` of gradients sent back (``grads``), ``C = H (d + d_v) = 2 x 64``, ``b = 4``.
SGFormer's linear attention only all-reduces its sums (``H M (M + 1)`` numbers per layer
forward and backward; the all-reduce is not in the ledger, which counts row exchanges).

The machine has 2 cores: at P = 4 the ranks share them (times oversubscribed; memory figures
are not affected). Results: ``benchmarks/results/graph_transformer.{json,md,png}``, the JSON
rewritten (atomically) after every launch.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
import types
from pathlib import Path

import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from procmem import MALLOC_ENV, reset_peak, status_kib  # noqa: E402 (benchmarks/procmem.py)
from suite import _saved_bytes  # noqa: E402 (bytes saved for backward, as the suite counts)

import pyg_sar  # noqa: E402
from pyg_sar.files import atomic_write  # noqa: E402

RESULTS = HERE / "results"
OUT = RESULTS / "graph_transformer.json"
RANK_ENV = {**MALLOC_ENV, "OMP_NUM_THREADS": "1"}
CHANNELS, HEADS, LAYERS = 64, 4, 2


# ---------------------------------------------------------------- models
def gps_model(in_channels: int, classes: int) -> torch.nn.Module:
    """2 x GPSConv(GINConv + 4-head MultiheadAttention, batch norm), 64 channels, dropout 0."""
    from torch.nn import Linear, ReLU, Sequential
    from torch_geometric.nn import GINConv, GPSConv

    class GPS(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin_in = Linear(in_channels, CHANNELS)
            self.convs = torch.nn.ModuleList(
                GPSConv(CHANNELS, GINConv(Sequential(Linear(CHANNELS, CHANNELS), ReLU(),
                                                     Linear(CHANNELS, CHANNELS))),
                        heads=HEADS, dropout=0.0) for _ in range(LAYERS))
            self.lin_out = Linear(CHANNELS, classes)

        def forward(self, x, edge_index):
            x = self.lin_in(x)
            for conv in self.convs:
                x = conv(x, edge_index)
            return self.lin_out(x)

    return GPS()


def sgformer_model(in_channels: int, classes: int) -> torch.nn.Module:
    """PyG's SGFormer: 2 attention layers (4 heads x 64), a 3-layer GCN branch, dropout 0."""
    from torch_geometric.nn.models import SGFormer
    return SGFormer(in_channels, CHANNELS, classes, trans_num_layers=LAYERS,
                    trans_num_heads=HEADS, trans_dropout=0.0, gnn_num_layers=3,
                    gnn_dropout=0.0)


def _gps_ring_forward(self, x, edge_index, batch=None, mode="sar"):
    """PyG's GPSConv.forward for one graph over a DistGraph, the attention through
    ``ring_attention`` (used when ``pyg_sar.convert`` does not convert GPSConv itself)."""
    from pyg_sar.core.exchange import Wire
    from pyg_sar.core.global_attention import ring_attention
    hs = []
    h = self.conv(x, edge_index)
    h = F.dropout(h, p=self.dropout, training=self.training) + x
    hs.append(self.norm1(h) if self.norm1 is not None else h)
    mha = self.attn
    n, c = x.shape
    heads = mha.num_heads
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
    shape = (n, heads, c // heads)
    h = ring_attention(edge_index, q.reshape(shape), k.reshape(shape), v.reshape(shape),
                       scale=(c // heads) ** -0.5, mode=mode,
                       wire=Wire(label=self._bench_label))
    h = mha.out_proj(h.reshape(n, c))
    h = F.dropout(h, p=self.dropout, training=self.training) + x
    hs.append(self.norm2(h) if self.norm2 is not None else h)
    out = sum(hs)
    out = out + self.mlp(out)
    return self.norm3(out) if self.norm3 is not None else out


def convert_model(name: str, net: torch.nn.Module, mode: str) -> tuple[torch.nn.Module, str]:
    """``pyg_sar.convert(net)``; where this pyg_sar still refuses GPSConv's options, GPSConv is
    trusted and its forward replaced by the ring engine's (returns how it was done). A refusal
    of any other model is raised."""
    from pyg_sar.nn.layers import UnsupportedLayerError
    config = pyg_sar.SARConfig(mode=mode)
    try:
        pyg_sar.convert(net, config)
        return net, "pyg_sar.convert"
    except UnsupportedLayerError:
        if name != "gps":
            raise
    from torch_geometric.nn import GPSConv
    pyg_sar.convert(net, pyg_sar.SARConfig(mode=mode, trusted_layers=(GPSConv,)))
    for i, conv in enumerate(net.convs):
        conv._bench_label = f"convs.{i}.attn"
        conv.forward = types.MethodType(
            lambda self, x, ei, batch=None: _gps_ring_forward(self, x, ei, batch, mode),
            conv)
    return net, "engine: ring_attention in GPSConv's forward (convert refuses GPSConv)"


# ---------------------------------------------------------------- per rank
def rank_job(ctx, parts: str, model: str, modes: list[str], warmup: int = 1,
             repeats: int = 5) -> list[dict]:
    """Runs on every rank: measure ``model`` in every mode on this rank's partition."""
    torch.set_num_threads(1)
    part = pyg_sar.load_partition(parts, ctx.rank)
    x, y, mask = part.x, part.y, part.train_mask
    classes = int(part.meta["num_classes"])
    comm = ctx.comm
    rows = []
    for mode in modes:
        if mode == "pyg" and ctx.world_size != 1:
            continue
        torch.manual_seed(0)
        net = (gps_model if model == "gps" else sgformer_model)(x.shape[1], classes)
        if mode == "pyg":
            ei = part.global_edge_index()
            zeros = torch.zeros(x.shape[0], dtype=torch.long)
            if model == "gps":
                def forward(net=net, ei=ei):
                    return net(x, ei)
            else:
                def forward(net=net, ei=ei, zeros=zeros):
                    return net(x, ei, zeros)
            how = "plain PyG"
        else:
            net, how = convert_model(model, net, mode)
            pyg_sar.broadcast_parameters(net)

            if model == "gps":
                def forward(net=net, graph=part.graph):
                    return net(x, graph)
            else:  # PyG's SGFormer.forward takes the batch vector: one graph
                zeros = torch.zeros(x.shape[0], dtype=torch.long)

                def forward(net=net, graph=part.graph, zeros=zeros):
                    return net(x, graph, zeros)
        opt = torch.optim.Adam(net.parameters(), lr=0.01)

        def loss_of(out):
            return pyg_sar.nn.functional.cross_entropy(out, y, mask)

        def step(net=net, opt=opt, forward=forward, mode=mode) -> dict:
            comm.traffic.reset()
            opt.zero_grad()
            loss = loss_of(forward())
            loss.backward()
            if mode != "pyg":
                pyg_sar.all_reduce_gradients(net)
            opt.step()
            return {"loss": float(loss), "traffic": comm.traffic.as_dict()}

        for _ in range(warmup):
            step()
        opt.zero_grad()
        saved = _saved_bytes(forward, loss_of)
        opt.zero_grad()
        times, growth, infos = [], [], []
        for _ in range(repeats):
            comm.barrier()
            gc.collect()
            reset_peak()
            base = status_kib("VmRSS")
            t = time.perf_counter()
            infos.append(step())
            times.append(time.perf_counter() - t)
            growth.append((status_kib("VmHWM") - base) / 1024)
        rows.append({"model": model, "mode": mode, "rank": ctx.rank, "how": how,
                     "step_s": statistics.median(times), "step_times_s": times,
                     "peak_growth_mb": max(growth), "peak_growth_all_mb": growth,
                     "saved_mb": saved / 2**20, "rss_after_mb": status_kib("VmRSS") / 1024,
                     "losses": [i["loss"] for i in infos],
                     "traffic": infos[-1]["traffic"], "num_nodes": part.num_nodes,
                     "num_global_nodes": int(part.graph.num_global_nodes),
                     "threads": torch.get_num_threads()})
        del net, opt
        gc.collect()
    return rows


# ---------------------------------------------------------------- driver
def workloads(gps_nodes: int, sgformer_nodes: int) -> dict:
    """model -> (workload name (model and size), description, graph factory)."""
    from pyg_sar.datasets import sbm, sbm_dense
    return {
        "gps": (f"gps_{gps_nodes // 1000}k",
                f"GPS (GINConv + MHA, 2 layers, 64 ch, 4 heads, batch norm) on a dense SBM, "
                f"{gps_nodes:,} nodes, {10 * gps_nodes:,} edges (80% across communities)",
                lambda: sbm(num_nodes=gps_nodes, num_edges=10 * gps_nodes, num_classes=10,
                            homophily=0.2, seed=0)),
        "sgformer": (f"sgformer_{sgformer_nodes // 1000}k",
                     f"SGFormer (2 linear-attention layers, 4 x 64, GCN branch 3 layers) on "
                     f"the dense SBM, {sgformer_nodes:,} nodes, "
                     f"{sgformer_nodes * 55 // 6:,} edges (80% across communities)",
                     lambda: sbm_dense(num_nodes=sgformer_nodes,
                                       num_edges=sgformer_nodes * 55 // 6)),
    }


def formula(row: dict) -> dict:
    """Ring traffic per attention layer of this rank (bytes), global_attention.py's formula."""
    n, n_r = row["num_global_nodes"], row["num_nodes"]
    per = (n - n_r) * HEADS * 2 * (CHANNELS // HEADS) * 4
    if row["mode"] == "sar":
        return {"rows_recv": per, "refetch_recv": per, "grads_sent": per}
    return {"rows_recv": per, "grads_sent": per}


def ledger_attention(row: dict) -> dict:
    """The ledger's attention entries of one step, per layer (bytes)."""
    out = {}
    for layer, dirs in row["traffic"].items():
        if "attn" in layer:
            out[layer] = {f"{d}_{k}": v[k] for d, v in dirs.items() for k in ("sent", "recv")}
    return out


def summarise(rows: list[dict]) -> list[dict]:
    """One line per (workload, P, mode): max over ranks."""
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["workload"], r["world_size"], r["mode"]), []).append(r)
    out = []
    for (wl, world, mode), rs in sorted(groups.items()):
        sent = max(sum(v["sent"] for d in r["traffic"].values() for v in d.values()) for r in rs)
        recv = max(sum(v["recv"] for d in r["traffic"].values() for v in d.values()) for r in rs)
        line = {"workload": wl, "world_size": world, "mode": mode, "how": rs[0]["how"],
                "peak_growth_mb": max(r["peak_growth_mb"] for r in rs),
                "saved_mb": max(r["saved_mb"] for r in rs),
                "step_s": max(r["step_s"] for r in rs),
                "ledger_sent_mb": sent / 2**20, "ledger_recv_mb": recv / 2**20,
                "final_loss": rs[0]["losses"][-1], "loadavg_before": rs[0]["loadavg_before"]}
        if wl.startswith("gps") and world > 1 and mode != "pyg":
            # ledger vs formula: shown for the rank with the most remote rows (layer 0),
            # checked on every rank and attention layer
            r = max(rs, key=lambda r: r["num_global_nodes"] - r["num_nodes"])
            line["attention_ledger_layer0"] = ledger_attention(r).get("convs.0.attn", {})
            line["attention_formula_layer"] = formula(r)
            line["attention_matches_formula"] = all(
                len(ledger_attention(r)) == LAYERS
                and all(led.get(k) == v for led in ledger_attention(r).values()
                        for k, v in formula(r).items()) for r in rs)
        out.append(line)
    return out


def _table(result: dict) -> str:
    lines = [f"# Graph transformers across ranks ({result['machine']['cpu_count']} cores, "
             f"one thread per rank; P > {result['machine']['cpu_count']} oversubscribed)", ""]
    for wl, desc in result["workloads"].items():
        lines += [f"## {wl}: {desc}", "",
                  "| P | mode | peak RSS growth / rank (MB) | saved for backward / rank (MB) "
                  "| step (s, median) | ledger sent / rank (MB) | attention traffic: ledger = "
                  "formula (every rank, layer) | load avg before | how |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for s in result["summary"]:
            if s["workload"] != wl:
                continue
            match = s.get("attention_matches_formula")
            match = "-" if match is None else ("yes" if match else "NO")
            lines.append(f"| {s['world_size']} | {s['mode']} | {s['peak_growth_mb']:.1f} | "
                         f"{s['saved_mb']:.1f} | {s['step_s']:.3f} | "
                         f"{s['ledger_sent_mb']:.1f} | {match} | "
                         f"{s['loadavg_before'][0]:.1f} | {s['how']} |")
        lines.append("")
    for f in result.get("failures", []):
        lines.append(f"* FAILED {f['workload']} P={f['world_size']}: {f['error']}")
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    wls = list(result["workloads"])
    fig, axes = plt.subplots(2, len(wls), figsize=(4.8 * len(wls), 6.4), squeeze=False)
    for j, wl in enumerate(wls):
        rows = [s for s in result["summary"] if s["workload"] == wl]
        for i, (metric, label) in enumerate((("peak_growth_mb", "peak RSS growth / rank (MB)"),
                                             ("step_s", "step time, slowest rank (s)"))):
            ax = axes[i][j]
            for mode, style, color in (("sar", "o-", "C0"), ("halo", "^-.", "C2"),
                                       ("pyg", "x", "k")):
                pts = sorted((s["world_size"], s[metric]) for s in rows if s["mode"] == mode)
                if pts:
                    ax.plot([p for p, _ in pts], [v for _, v in pts], style, color=color,
                            label="PyG (1 process)" if mode == "pyg" else mode,
                            markersize=9 if mode == "pyg" else 5)
            ax.set_xscale("log", base=2)
            ax.set_xticks([1, 2, 4])
            ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
            ax.set_title(wl, fontsize=9)
            ax.set_xlabel("P (processes; P = 4 shares 2 cores)")
            ax.set_ylabel(label, fontsize=8)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)


def report(result: dict, out: Path) -> None:
    atomic_write(out.with_suffix(".md"), _table(result))
    try:
        plot(result, out.with_suffix(".png"))
    except ImportError as exc:  # matplotlib is a benchmark-only dependency
        print(f"no plot: {exc}")


def main(argv: list[str] | None = None) -> int:
    from pyg_sar.testing import run_on_ranks
    from pyg_sar.testing.launcher import RankFailure

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workloads", nargs="+", default=["gps", "sgformer"],
                   choices=["gps", "sgformer"])
    p.add_argument("--world-sizes", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--modes", nargs="+", default=["sar", "halo", "pyg"],
                   choices=["sar", "halo", "pyg"])
    p.add_argument("--gps-nodes", type=int, default=10_000)
    p.add_argument("--sgformer-nodes", type=int, default=120_000)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--work", default="/tmp/pyg_sar_bench_gt")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--report-only", action="store_true")
    args = p.parse_args(argv)
    out = Path(args.out)
    if args.report_only:
        result = json.loads(out.read_text())
        result["summary"] = summarise(result["rows"])
        report(result, out)
        return 0
    if args.repeats < 5:
        raise ValueError(f"--repeats must be >= 5 (got {args.repeats})")
    loads = workloads(args.gps_nodes, args.sgformer_nodes)
    result = {"machine": {"cpu_count": os.cpu_count(), "torch": torch.__version__,
                          "processor": platform.processor() or platform.machine(),
                          "python": platform.python_version()},
              "threads_per_rank": 1, "warmup": args.warmup, "repeats": args.repeats,
              "workloads": {}, "rows": [], "summary": [], "failures": []}
    if out.exists():  # keep other workloads' rows; the ones measured now are replaced
        old = json.loads(out.read_text())
        redo = {(loads[w][0], p) for w in args.workloads for p in args.world_sizes}
        result["rows"] = [r for r in old["rows"] if (r["workload"], r["world_size"]) not in redo]
        result["workloads"] = old["workloads"]
        result["failures"] = [f for f in old.get("failures", [])
                              if (f["workload"], f["world_size"]) not in redo]
        result["summary"] = summarise(result["rows"])
    start = time.perf_counter()
    for model in args.workloads:
        name, desc, factory = loads[model]
        result["workloads"][name] = desc
        data = factory()
        for world in args.world_sizes:
            parts = Path(args.work) / f"{name}-{world}"
            if not (parts / "meta.json").exists():
                pyg_sar.partition_graph(data, world, parts, method="metis", overwrite=True)
            modes = [m for m in args.modes if m != "pyg" or world == 1]
            t = time.perf_counter()
            load = os.getloadavg()  # the host is shared: other jobs' load inflates times
            try:
                res = run_on_ranks(f"{Path(__file__).resolve()}:rank_job", world,
                                   kwargs=dict(parts=str(parts), model=model, modes=modes,
                                               warmup=args.warmup, repeats=args.repeats),
                                   timeout=1800, env=RANK_ENV)
            except RankFailure as exc:
                msg = str(exc).strip().splitlines()
                err = next((m for m in reversed(msg) if "Error" in m), msg[-1])
                result["failures"].append({"workload": name, "world_size": world,
                                           "error": err})
                print(f"{name} P={world}: FAILED: {err}", flush=True)
                continue
            for rank_rows in res:
                for r in rank_rows:
                    r.update(workload=name, world_size=world, loadavg_before=load)
                    result["rows"].append(r)
            result["summary"] = summarise(result["rows"])
            for s in result["summary"]:
                if s["workload"] == name and s["world_size"] == world:
                    print(f"{name:12s} P={world} {s['mode']:4s} mem {s['peak_growth_mb']:8.1f} MB "
                          f"saved {s['saved_mb']:8.1f} MB step {s['step_s']:7.3f} s sent "
                          f"{s['ledger_sent_mb']:8.1f} MB "
                          f"formula {s.get('attention_matches_formula', '-')} ({s['how']})",
                          flush=True)
            print(f"  launch {time.perf_counter() - t:.0f} s", flush=True)
            atomic_write(out, json.dumps(result, indent=1))
        del data
    result["wall_s"] = time.perf_counter() - start  # of this invocation
    atomic_write(out, json.dumps(result, indent=1))
    report(result, out)
    print(f"wrote {out}, {out.with_suffix('.md')}, {out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
