"""Bulk sampling throughput and end-to-end minibatch training vs PyG NeighborLoader and DGL.

    python benchmarks/sampling.py                   # throughput: WordNet, R-MAT 1M; P = 1, 2, 4
    python benchmarks/sampling.py --train-epochs 10 # + 3-layer GraphSAGE on WordNet
    python benchmarks/sampling.py --plot-only benchmarks/results/sampling.json

Throughput = sampled minibatches per second (and sampled edges per second), feature
collation included (every minibatch's ``x`` gathered), batch 1024, fanouts [15, 10, 5] and
[25, 10]. Ours: bulk k = 1, 4, 16, 64 (native kernels). Peers, measured in the same run at the
same thread count: PyG ``NeighborLoader`` (needs torch-sparse or pyg-lib; torch-sparse 0.6.18
can be built into ``benchmarks/.cache/peers``) and DGL 1.1.3's CPU ``NeighborSampler`` (with
``x[input_nodes]`` gathered). Peers are optional: missing ones are reported, not faked.
Each thread count runs in its own process (``OMP_NUM_THREADS`` and ``torch.set_num_threads``);
medians of ``--repeats`` timed passes over ``--batches`` minibatches after one warm-up pass.
P = 2, 4: ``mpiexec`` ranks with one thread each (1D rows), throughput summed over ranks.
Results: ``benchmarks/results/sampling.json``, ``sampling.md``, ``plots/sampling_*.png``.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PEERS = HERE / ".cache" / "peers"
RESULTS = HERE / "results"
sys.path.insert(0, str(ROOT))
if PEERS.is_dir():
    sys.path.append(str(PEERS))  # optional peers (dgl, torch-sparse), never the package's deps
os.environ.setdefault("DGLBACKEND", "pytorch")

import torch  # noqa: E402

from pyg_sar.files import atomic_write  # noqa: E402

FANOUTS = {"15-10-5": [15, 10, 5], "25-10": [25, 10]}
BULKS = [1, 4, 16, 64]
BATCH = 1024


def load(name: str):
    from pyg_sar.datasets import load_dataset, rmat
    if name == "wordnet":
        return load_dataset("wordnet")
    if name == "rmat_1m":
        return rmat(1_000_000, 5_000_000, seed=0)
    raise ValueError(f"unknown workload {name!r}")


def _timed(make_iter, batches: int, repeats: int) -> tuple[float, float]:
    """Median seconds per pass and sampled edges per pass; a pass is the first `batches`
    minibatches of a fresh epoch (so bulk k = 64 samples 64 minibatches for 64 consumed)."""
    times, edges = [], 0
    for r in range(repeats + 1):  # the first pass warms up
        it = make_iter()
        t0 = time.perf_counter()
        e = 0
        for _ in range(batches):
            e += next(it)
        dt = time.perf_counter() - t0
        if r:
            times.append(dt)
            edges = e
    return statistics.median(times), edges


def ours_iter(data, fanout, bulk, seed):
    from pyg_sar.sampling import BulkNeighborLoader
    loader = BulkNeighborLoader(data, fanout, batch_size=BATCH, bulk=bulk, seed=seed,
                                input_nodes=data.train_mask, backend="native")

    def gen():
        for batch in loader:
            yield batch.edge_index.size(1)
    return gen()


def pyg_iter(data, fanout, seed):
    from torch_geometric.loader import NeighborLoader
    torch.manual_seed(seed)
    loader = NeighborLoader(data, fanout, batch_size=BATCH, input_nodes=data.train_mask,
                            shuffle=True)

    def gen():
        for batch in loader:
            yield batch.edge_index.size(1)
    return gen()


def dgl_iter(data, fanout, seed, graph_cache: dict):
    import dgl
    if "g" not in graph_cache:
        graph_cache["g"] = dgl.graph((data.edge_index[0], data.edge_index[1]),
                                     num_nodes=data.num_nodes)
    g = graph_cache["g"]
    sampler = dgl.dataloading.NeighborSampler(fanout)
    seeds = data.train_mask.nonzero().view(-1)
    torch.manual_seed(seed)

    def gen():
        perm = seeds[torch.randperm(seeds.numel())]
        for i in range(0, perm.numel(), BATCH):
            input_nodes, _, blocks = sampler.sample(g, perm[i:i + BATCH])
            data.x.index_select(0, input_nodes)  # feature collation, as the others do
            yield sum(b.num_edges() for b in blocks)
    return gen()


def peers_available() -> dict:
    import torch_geometric.typing as tgt
    return {"pyg": bool(tgt.WITH_PYG_LIB or tgt.WITH_TORCH_SPARSE),
            "dgl": importlib.util.find_spec("dgl") is not None}


def throughput_worker(workloads: list[str], batches: int, repeats: int,
                      peer_batches: int | None = None) -> dict:
    """One process, one thread count (from OMP_NUM_THREADS): every loader on every workload."""
    threads = int(os.environ.get("OMP_NUM_THREADS", "1"))
    torch.set_num_threads(threads)
    peers = peers_available()
    rows = []
    for name in workloads:
        data = load(name)
        cache: dict = {}
        for fname, fanout in FANOUTS.items():
            runs = [(f"ours k={k}", lambda k=k, d=data, f=fanout: ours_iter(d, f, k, 0))
                    for k in BULKS]
            if peers["pyg"]:
                runs.append(("PyG NeighborLoader",
                             lambda d=data, f=fanout: pyg_iter(d, f, 0)))
            if peers["dgl"]:
                runs.append(("DGL NeighborSampler",
                             lambda d=data, f=fanout, c=cache: dgl_iter(d, f, 0, c)))
            for label, make in runs:
                # peers sample one minibatch per step, so fewer of them time the same rate
                n = batches if label.startswith("ours") else (peer_batches or batches)
                sec, edges = _timed(make, n, repeats)
                rows.append(dict(workload=name, fanout=fname, loader=label, threads=threads,
                                 P=1, batches_per_s=n / sec,
                                 edges_per_s=edges / sec, batches=n, load_avg=_load_avg()))
                print(f"  {name} {fname} {label} threads={threads}: "
                      f"{n / sec:.2f} batches/s, {edges / sec / 1e6:.2f} M edges/s, "
                      f"load {_load_avg()[0]:.2f}", file=sys.stderr, flush=True)
    return dict(rows=rows, peers=peers)


def dist_rank(ctx, parts: str, fanout: list[int], bulk: int, batches: int, repeats: int):
    """Our loader on one rank of P (1D rows); returns this rank's median pass time."""
    import pyg_sar
    from pyg_sar.sampling import BulkNeighborLoader
    torch.set_num_threads(1)
    part = pyg_sar.load_partition(parts, ctx.rank)
    loader = BulkNeighborLoader(part, fanout, batch_size=BATCH, bulk=bulk, seed=0,
                                input_nodes=part.train_mask, context=ctx)
    # the same whole bulks on every rank (each rank's first steps_per_epoch - 1 slots are real
    # minibatches), so stopping early leaves no rank inside a collective
    per_rank = max(bulk, min(batches, loader.steps_per_epoch - 1) // bulk * bulk)
    times, edges = [], 0
    for r in range(repeats + 1):
        ctx.comm.barrier()
        t0 = time.perf_counter()
        e = 0
        for i, batch in enumerate(loader):
            e += batch.edge_index.size(1)
            if i + 1 == per_rank:
                break
        dt = time.perf_counter() - t0
        ctx.comm.barrier()
        if r:
            times.append(dt)
            edges = e
    return dict(seconds=statistics.median(times), batches=per_rank, edges=edges)


def run_distributed(workload: str, world: int, batches: int, repeats: int) -> list[dict]:
    import pyg_sar
    from pyg_sar.testing import run_on_ranks
    parts = RESULTS / "tmp" / f"sampling-{workload}-{world}"
    if not (parts / "meta.json").exists():
        pyg_sar.partition_graph(load(workload), world, parts, method="metis", seed=0,
                                overwrite=True, balance="nodes")  # as the results were made
    rows = []
    for fname, fanout in FANOUTS.items():
        for bulk in (1, 16):
            res = run_on_ranks(f"{Path(__file__).resolve()}:dist_rank", world, timeout=1800,
                               kwargs=dict(parts=str(parts), fanout=fanout, bulk=bulk,
                                           batches=batches, repeats=repeats))
            total = sum(r["batches"] for r in res)
            slowest = max(r["seconds"] for r in res)
            rows.append(dict(workload=workload, fanout=fname, loader=f"ours k={bulk}",
                             threads=1, P=world, batches_per_s=total / slowest,
                             edges_per_s=sum(r["edges"] for r in res) / slowest,
                             batches=total, load_avg=_load_avg()))
            print(f"  {workload} {fname} ours k={bulk} P={world}: "
                  f"{total / slowest:.2f} batches/s", file=sys.stderr, flush=True)
    return rows


def train_compare(epochs: int, threads: int, seed: int = 0) -> dict:
    """3-layer GraphSAGE on WordNet: our loader vs NeighborLoader, same model and seed."""
    import torch.nn.functional as F
    from torch_geometric.nn import GraphSAGE

    from pyg_sar.sampling import BulkNeighborLoader
    torch.set_num_threads(threads)
    data = load("wordnet")
    out = {}
    loaders = {"ours k=16": lambda: BulkNeighborLoader(
        data, [15, 10, 5], batch_size=BATCH, bulk=16, seed=seed, input_nodes=data.train_mask)}
    if peers_available()["pyg"]:
        from torch_geometric.loader import NeighborLoader
        loaders["PyG NeighborLoader"] = lambda: NeighborLoader(
            data, [15, 10, 5], batch_size=BATCH, input_nodes=data.train_mask, shuffle=True)
    for label, make in loaders.items():
        torch.manual_seed(seed)  # model init and NeighborLoader's shuffle
        model = GraphSAGE(data.num_features, 128, num_layers=3,
                          out_channels=int(data.y.max()) + 1, dropout=0.5)
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        loader = make()
        epoch_times = []
        for _ in range(epochs):
            model.train()
            t0 = time.perf_counter()
            for batch in loader:
                opt.zero_grad()
                logits = model(batch.x, batch.edge_index)[:batch.batch_size]
                F.cross_entropy(logits, batch.y[:batch.batch_size]).backward()
                opt.step()
            epoch_times.append(time.perf_counter() - t0)
        model.eval()
        with torch.no_grad():  # full-neighbourhood inference, the same for both loaders
            pred = model(data.x, data.edge_index).argmax(1)
        acc = float((pred[data.test_mask] == data.y[data.test_mask]).float().mean())
        out[label] = dict(epoch_s=statistics.median(epoch_times[1:] or epoch_times),
                          epoch_times=epoch_times, test_acc=acc, load_avg=_load_avg())
        print(f"  train {label}: {out[label]['epoch_s']:.1f} s/epoch, test {acc:.4f}",
              file=sys.stderr, flush=True)
    return dict(epochs=epochs, threads=threads, seed=seed, results=out)


def _load_avg() -> list[float]:
    return list(os.getloadavg())


def report(res: dict) -> str:
    lines = ["# Bulk sampling benchmark", "",
             f"Machine: {res['machine']}; load average at start {res['load_start']}, at end "
             f"{res['load_end']} (the 2 cores are shared with other jobs). Batch {BATCH}, "
             "feature collation included; medians of timed passes after a warm-up pass.", ""]
    lines.append("| workload | fanout | threads | P | loader | minibatches/s | M edges/s | "
                 "vs NeighborLoader | vs DGL | load (1 min) |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    rows = res["rows"]
    for r in rows:
        def ratio(peer, r=r):
            base = [b for b in rows if b["loader"] == peer and b["workload"] == r["workload"]
                    and b["fanout"] == r["fanout"] and b["threads"] == r["threads"]
                    and b["P"] == 1]
            if not base or r["P"] != 1 or r["loader"] == peer:
                return "—"
            return f"{r['batches_per_s'] / base[0]['batches_per_s']:.2f}x"
        load = f"{r['load_avg'][0]:.2f}" if "load_avg" in r else "—"
        lines.append(f"| {r['workload']} | {r['fanout']} | {r['threads']} | {r['P']} | "
                     f"{r['loader']} | {r['batches_per_s']:.2f} | {r['edges_per_s'] / 1e6:.2f} "
                     f"| {ratio('PyG NeighborLoader')} | {ratio('DGL NeighborSampler')} | "
                     f"{load} |")
    if res.get("train"):
        t = res["train"]
        lines += ["", f"3-layer GraphSAGE on WordNet (hidden 128, fanout 15-10-5, batch 1024, "
                      f"{t['epochs']} epochs, {t['threads']} thread(s), seed {t.get('seed', 0)}):",
                  "",
                  "| loader | epoch time (median) | test accuracy |", "|---|---|---|"]
        for label, v in t["results"].items():
            lines.append(f"| {label} | {v['epoch_s']:.1f} s | {100 * v['test_acc']:.2f}% |")
    lines += ["", f"Peers: {res['peers']}"]
    return "\n".join(lines) + "\n"


def plot(res: dict, out_dir: Path) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for wl in sorted({r["workload"] for r in res["rows"]}):
        fig, axes = plt.subplots(1, len(FANOUTS), figsize=(6 * len(FANOUTS), 4))
        for ax, fname in zip(axes, FANOUTS):
            rows = [r for r in res["rows"] if r["workload"] == wl and r["fanout"] == fname]
            labels = [f"{r['loader']}\nT={r['threads']} P={r['P']}" for r in rows]
            ax.bar(range(len(rows)), [r["batches_per_s"] for r in rows],
                   color=["C0" if r["loader"].startswith("ours") else "C3" for r in rows])
            ax.set_xticks(range(len(rows)), labels, rotation=90, fontsize=6)
            ax.set_ylabel("minibatches / s (features included)")
            ax.set_title(f"{wl}, fanout {fname}")
        fig.tight_layout()
        path = out_dir / f"sampling_{wl}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        files.append(str(path))
    return files


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", default="wordnet,rmat_1m")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--worlds", default="2,4")
    p.add_argument("--batches", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--peer-batches", type=int, default=None,
                   help="minibatches per timed pass for the peers (default: --batches)")
    p.add_argument("--train-epochs", type=int, default=0)
    p.add_argument("--train-seed", type=int, default=0,
                   help="seed of the training comparison (model, loaders)")
    p.add_argument("--out", default=str(RESULTS / "sampling.json"))
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--plot-only", default=None)
    args = p.parse_args()
    workloads = [w for w in args.workloads.split(",") if w]
    if args.worker:
        print(json.dumps(throughput_worker(workloads, args.batches, args.repeats,
                                           args.peer_batches)))
        return
    if args.plot_only:
        res = json.loads(Path(args.plot_only).read_text())
        print("\n".join(plot(res, RESULTS / "plots")))
        return
    import platform
    res = dict(machine=f"{os.cpu_count()} CPU cores, {platform.machine()}, torch "
                       f"{torch.__version__}", load_start=_load_avg(), rows=[], peers=None,
               settings=vars(args))
    for t in [int(x) for x in args.threads.split(",") if x]:
        env = dict(os.environ, OMP_NUM_THREADS=str(t), PYTHONPATH=str(ROOT))
        proc = subprocess.run([sys.executable, __file__, "--worker", "--workloads",
                               args.workloads, "--batches", str(args.batches), "--repeats",
                               str(args.repeats)]
                              + (["--peer-batches", str(args.peer_batches)]
                                 if args.peer_batches else []),
                              env=env, capture_output=True, text=True, timeout=7200)
        sys.stderr.write(proc.stderr[-4000:])
        if proc.returncode != 0:
            raise RuntimeError(f"throughput worker (threads={t}) failed:\n{proc.stderr[-3000:]}")
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        res["rows"] += out["rows"]
        res["peers"] = out["peers"]
    for world in [int(x) for x in args.worlds.split(",") if x]:
        for wl in workloads:
            res["rows"] += run_distributed(wl, world, args.batches, args.repeats)
    if args.train_epochs:
        res["train"] = train_compare(args.train_epochs, 1, args.train_seed)
    res["load_end"] = _load_avg()
    out = Path(args.out)
    atomic_write(out, json.dumps(res, indent=1))
    atomic_write(out.with_suffix(".md"), report(res))
    print(report(res))
    print("\n".join(plot(res, RESULTS / "plots")))


if __name__ == "__main__":
    main()
