"""Training across hosts that each have a memory budget, where one host cannot train alone.

    python benchmarks/limited_hosts.py --runs plain            # plain PyG, no limit (reference)
    python benchmarks/limited_hosts.py --runs plain-limited    # plain PyG within one budget
    python benchmarks/limited_hosts.py --runs mpiexec torchrun # pyg_sar on P budget-limited hosts
    python benchmarks/limited_hosts.py --runs p1               # pyg_sar in one process, no limit
    python benchmarks/limited_hosts.py --report                # md + plot from the JSON
    python benchmarks/limited_hosts.py --rmat-nodes 800000 --rmat-edges 8000000 --budget 2.25G \
        --out benchmarks/results/limited_hosts.json --runs ...     # a larger R-MAT graph

Hosts are network-namespace hosts (``pyg_sar.testing.netns.NetnsHosts(memory=B)``, root only),
each in its own memory cgroup of ``--budget`` B bytes, swap off; every process started on a
host (Hydra's proxy or torchrun's agent, the ranks, their witnesses) is in its cgroup. Recorded
per run: exit status, the cgroup's OOM-kill counter and peak per host (**the peak includes page
cache charged to the cgroup**), each rank's VmHWM (``peak_rss_mb`` from ``pyg_sar.train``), the
loss curve, and the planner's prediction (``python -m pyg_sar.plan --parts``) of the per-rank
peak for P = the hosts and P = 1. The reference run (plain PyG, no limit) runs in a memory cgroup
of ``--reference-limit`` so that it cannot hurt the machine. One run of each (a memory figure,
not a timing: step times on this 2-core machine with P = 4 ranks are oversubscribed and only
reported).

Every process runs with glibc's ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_TRIM_THRESHOLD_`` at
128 KiB (``--allocator trim``, the default; as ``benchmarks/procmem.py``): freed tensors go
back to the kernel, so a rank's resident size follows its live tensors, which is what
``python -m pyg_sar.plan`` predicts. ``--allocator default`` keeps glibc's own thresholds
(freed blocks of up to 32 MiB stay in the heap and the resident size grows from epoch to
epoch). The planner's per-rank prediction (``pyg_sar.plan.predict_partition``: peak and
engine bytes sent per epoch) is stored next to each rank's measurement.

Results: ``benchmarks/results/limited_hosts.json`` (updated atomically after every run), ``.md``
and ``.png`` (``--report``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from pyg_sar.files import atomic_write  # noqa: E402
from pyg_sar.testing.cgroup import MemoryCgroup, parse_size  # noqa: E402
from pyg_sar.testing.netns import MPI_ENV, NetnsHosts, run_commands  # noqa: E402

RESULTS = HERE / "results" / "limited_hosts.json"
RUNS = ("plain", "plain-limited", "p1", "mpiexec", "torchrun")
# glibc: return freed blocks above 128 KiB to the kernel (benchmarks/procmem.py MALLOC_ENV)
TRIM_ENV = {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072"}
HANG_S = 560.0  # hang detector per launch: each queued job stays under 10 minutes


def _env(a: argparse.Namespace) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK",
                        "GLOO_SOCKET_IFNAME", *TRIM_ENV)
           and not k.startswith(("PMI_", "HYDRA_", "TORCHELASTIC_"))}
    alloc = TRIM_ENV if a.allocator == "trim" else {}
    return dict(env, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", **MPI_ENV, **alloc,
                PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p))


def _sizes(a: argparse.Namespace) -> list[str]:
    """``pyg_sar.train``'s R-MAT size flags (``--dataset rmat`` only)."""
    out = []
    if a.rmat_nodes:
        out += ["--rmat-nodes", str(a.rmat_nodes)]
    if a.rmat_edges:
        out += ["--rmat-edges", str(a.rmat_edges)]
    return out


def _dataset_kwargs(a: argparse.Namespace) -> dict:
    sizes = {"num_nodes": a.rmat_nodes, "num_edges": a.rmat_edges}
    return {k: v for k, v in sizes.items() if v}


def _train_args(a: argparse.Namespace) -> list[str]:
    return ["-m", "pyg_sar.train", "--model", "sage", "--layers", str(a.layers), "--hidden",
            str(a.hidden), "--dropout", "0", "--dtype", a.dtype, "--epochs", str(a.epochs),
            "--eval-every", str(a.epochs), "--progress", "log", "--log-every", "1"]


def _load() -> dict:
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {"runs": {}}


def _save(results: dict) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(RESULTS, json.dumps(results, indent=1))


def _set_out(path: str) -> None:
    global RESULTS
    RESULTS = Path(path)


def _parts(a: argparse.Namespace, world: int | None = None) -> Path:
    world = a.hosts if world is None else world
    sizes = "".join(f"-{v}" for v in _dataset_kwargs(a).values())
    out = Path(a.work) / f"parts-{a.dataset}{sizes}-{world}-{a.balance}"
    if not (out / "meta.json").exists():
        import pyg_sar
        from pyg_sar.datasets import load_dataset
        pyg_sar.partition_graph(load_dataset(a.dataset, **_dataset_kwargs(a)), world, out,
                                overwrite=True, balance=a.balance if world > 1 else None)
    return out


def _rank_plan(a: argparse.Namespace, parts: Path, pipeline_depth: int) -> list[dict]:
    """``pyg_sar.plan.predict_partition`` per rank: sizes, peak and engine bytes per epoch."""
    from pyg_sar import plan
    # pyg_sar.train's default --norm none: no batch norm between the layers
    w = plan.Workload(1, 1, 1, 1, hidden=a.hidden, layers=a.layers, model="sage", mode="sar",
                      pipeline_depth=pipeline_depth, dtype_bytes=4 if a.dtype == "float32" else 8,
                      norm=False)
    pp = plan.predict_partition(parts, w)
    return [{"rank": r.rank, "num_nodes": r.num_nodes, "num_edges": r.num_edges,
             "halo_rows": r.halo_rows, "send_rows": r.send_rows,
             "pred_peak_mb": r.plan.peak_bytes / plan.MB,
             "pred_bytes": r.plan.bytes_per_epoch - r.plan.traffic["allreduce"],
             "pred_memory_mb": {k: v / plan.MB for k, v in r.plan.memory.items()}}
            for r in pp.ranks]


def _plan(a: argparse.Namespace, parts: Path) -> dict:
    """The planner's per-rank peak for this model on the partition (P = hosts) and at P = 1."""
    base = [sys.executable, "-m", "pyg_sar.plan", "--model", "sage", "--hidden", str(a.hidden),
            "--layers", str(a.layers), "--dtype", a.dtype, "--norm", "none"]
    out = {}
    for name, extra in (("parts", ["--parts", str(parts)]), ("p1", None)):
        if extra is None:
            meta = json.loads((parts / "meta.json").read_text())
            extra = ["--nodes", str(meta["num_nodes"]), "--edges", str(meta["num_edges"]),
                     "--features", str(meta["num_features"]), "--classes",
                     str(meta["num_classes"]), "--world-sizes", "1"]
        text = subprocess.run(base + extra, capture_output=True, text=True, cwd=ROOT,
                              timeout=120).stdout
        out[name] = text
    return out


def _metrics(path: Path) -> dict | None:
    if not path.exists():
        return None
    m = json.loads(path.read_text())
    # Engine bytes each rank sent per training step (all layers, rows and gradients).
    sent = [[sum(d["sent"] for dirs in layers.values() for d in dirs.values())
             for layers in h["traffic"]] for h in m["history"] if isinstance(h.get("traffic"),
                                                                           list)]
    return {"loss": [h["loss"] for h in m["history"]], "peak_rss_mb": m["peak_rss_mb"],
            "world_size": m["world_size"], "backend": m["backend"],
            "final_test_acc": m["final_test_acc"], "bytes_sent_per_epoch": sent}


def run_plain(a: argparse.Namespace, work: Path) -> dict:
    """Plain PyG, whole graph, one process, in a cgroup of --reference-limit (no budget)."""
    metrics, log = work / "plain.json", work / "plain.log"
    cmd = [sys.executable, *_train_args(a), "--dataset", a.dataset, *_sizes(a), "--reference",
           "--metrics", str(metrics)]
    return _unlimited(a, cmd, metrics, log, "limited-hosts-plain")


def run_p1(a: argparse.Namespace, work: Path) -> dict:
    """pyg_sar in one process on the whole graph, in a cgroup of --reference-limit: the loss
    reference where plain PyG needs more memory than this machine gives one job."""
    metrics, log = work / "p1.json", work / "p1.log"
    cmd = [sys.executable, *_train_args(a), "--parts", str(_parts(a, 1)), "--metrics",
           str(metrics)]
    return _unlimited(a, cmd, metrics, log, "limited-hosts-p1")


def _unlimited(a: argparse.Namespace, cmd: list[str], metrics: Path, log: Path,
               name: str) -> dict:
    with MemoryCgroup(name, a.reference_limit) as cg:
        shell = ["sh", "-c", f'echo $$ > {cg.procs_file} && exec "$@"', "_", *cmd]
        t = time.perf_counter()
        codes = run_commands([shell], [log], env=_env(a), timeout=HANG_S)
        took = time.perf_counter() - t
        return {"rc": codes[0], "seconds": took, "cgroup_peak": cg.peak(),
                "oom_kills": cg.oom_kills(), "limit": cg.limit_bytes,
                "metrics": _metrics(metrics), "log_tail": log.read_text()[-1500:]}


def run_plain_limited(a: argparse.Namespace, work: Path) -> dict:
    """Plain PyG within one host's budget: expected to be ended by the OOM killer."""
    log = work / "plain_limited.log"
    with NetnsHosts(1, memory=a.budget) as hosts:
        cmd = hosts.command(0, [sys.executable, *_train_args(a), "--dataset", a.dataset,
                                *_sizes(a), "--reference"])
        t = time.perf_counter()
        codes = run_commands([cmd], [log], env=_env(a), timeout=HANG_S)
        took = time.perf_counter() - t
        return {"rc": codes[0], "shell_status": 128 - codes[0] if codes[0] < 0 else codes[0],
                "seconds": took, "cgroup_peak": hosts.memory_peak(0),
                "oom_kills": hosts.oom_kills(0), "log_tail": log.read_text()[-1500:]}


def run_hosts(a: argparse.Namespace, work: Path, launcher: str, parts: Path) -> dict:
    """pyg_sar on --hosts hosts of --budget each, one rank per host."""
    metrics = work / f"{launcher}.json"
    argv = [*_train_args(a), "--parts", str(parts), "--metrics", str(metrics)]
    with NetnsHosts(a.hosts, memory=a.budget) as hosts:
        if launcher == "mpiexec":
            cmds = [hosts.mpiexec_command([sys.executable, *argv])]
        else:
            cmds = [hosts.torchrun_command(h, argv) for h in range(a.hosts)]
        logs = [work / f"{launcher}{i}.log" for i in range(len(cmds))]
        t = time.perf_counter()
        codes = run_commands(cmds, logs, env=_env(a), timeout=HANG_S)
        took = time.perf_counter() - t
        return {"rc": codes, "seconds": took,
                "cgroup_peak": [hosts.memory_peak(h) for h in range(a.hosts)],
                "oom_kills": [hosts.oom_kills(h) for h in range(a.hosts)],
                "metrics": _metrics(metrics),
                "plan_ranks": _rank_plan(a, parts, 0 if launcher == "mpiexec" else 1),
                "log_tail": "".join(p.read_text()[-800:] for p in logs)}


# ---------------------------------------------------------------------------------- report
def report() -> None:
    res = _load()
    cfg, runs = res["config"], res["runs"]
    budget = cfg["budget"]
    mib = 2**20
    lines = [
        "# Training across memory-limited hosts",
        "",
        f"`{cfg['dataset']}` ({cfg['num_nodes']:,} nodes, {cfg['num_edges']:,} edges; "
        f"METIS balanced by {cfg.get('balance', 'nodes')}), SAGE "
        f"{cfg['layers']} x {cfg['hidden']}, {cfg['dtype']}, dropout 0, {cfg['epochs']} epochs; "
        f"{cfg['hosts']} network-namespace hosts of **{budget / mib:.0f} MiB** each (memory "
        f"cgroup, swap off), one rank per host. Generated by `benchmarks/limited_hosts.py`; one "
        f"run each (a memory measurement). This machine has 2 cores: {cfg['hosts']} ranks "
        f"oversubscribe them, so times are not step-time figures. Cgroup peaks include page "
        f"cache charged to the host's cgroup and every process on the host (launcher agent or "
        f"proxy, witness); VmHWM is the rank process's own peak resident set (it counts shared "
        f"library pages that may be charged to another cgroup). glibc allocator: "
        + ("freed blocks above 128 KiB returned to the kernel (`MALLOC_MMAP_THRESHOLD_` = "
           "`MALLOC_TRIM_THRESHOLD_` = 131072)" if cfg.get("allocator") == "trim" else
           "glibc's default thresholds") + ".",
        "",
        "| run | exit | OOM kills | cgroup peak per host (MiB) | rank VmHWM (MiB) | "
        "planner peak per rank (MiB) | time (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    pred = _current_peaks(res)
    for name in RUNS:
        r = runs.get(name)
        if r is None:
            continue
        m = r.get("metrics") or {}
        peaks = r["cgroup_peak"] if isinstance(r["cgroup_peak"], list) else [r["cgroup_peak"]]
        kills = r["oom_kills"] if isinstance(r["oom_kills"], list) else [r["oom_kills"]]
        rc = r["rc"] if isinstance(r["rc"], list) else [r["rc"]]
        exit_ = ", ".join("137 (SIGKILL)" if c == -9 else str(c) for c in rc)
        hwm = ", ".join(f"{v:.0f}" for v in m.get("peak_rss_mb", [])) or "-"
        p = pred.get("parts" if name in ("mpiexec", "torchrun") else "p1")
        label = {"plain": f"plain PyG, 1 process, no budget (cgroup limit "
                          f"{r.get('limit', 0) / mib:.0f} MiB)",
                 "plain-limited": "plain PyG, 1 process, one host's budget",
                 "p1": f"pyg_sar, 1 process, no budget (cgroup limit "
                       f"{r.get('limit', 0) / mib:.0f} MiB)",
                 "mpiexec": f"pyg_sar, {cfg['hosts']} hosts, mpiexec",
                 "torchrun": f"pyg_sar, {cfg['hosts']} hosts, torchrun"}[name]
        lines.append(f"| {label} | {exit_} | {', '.join(map(str, kills))} | "
                     f"{', '.join(f'{v / mib:.0f}' for v in peaks)} | {hwm} | "
                     f"{'-' if p is None else f'{p:.0f}'} | {r['seconds']:.0f} |")
    ref_name = "plain" if (runs.get("plain") or {}).get("metrics") else "p1"
    ref = (runs.get(ref_name) or {}).get("metrics")
    lines += ["", "Loss per epoch:", ""]
    for name in ("plain", "p1", "mpiexec", "torchrun"):
        m = (runs.get(name) or {}).get("metrics")
        if m is None:
            continue
        diff = ""
        if ref is not None and name != ref_name:
            rel = max(abs(x - y) / abs(y) for x, y in zip(m["loss"], ref["loss"]))
            what = "plain PyG" if ref_name == "plain" else "pyg_sar in one process"
            diff = f" (max relative difference to {what} {rel:.1e})"
        lines.append(f"* {name}: {', '.join(f'{v:.6f}' for v in m['loss'])}{diff}")
    lines += per_rank_lines(runs, cfg)
    lines += ["", "Planner: `python -m pyg_sar.plan --parts DIR --hidden "
              f"{cfg['hidden']} --layers {cfg['layers']} --norm none` prints these per-rank "
              "predictions (pyg_sar.train's default: no norm); the P = 1 figure is pyg_sar in "
              "one process, not plain PyG.", ""]
    md = RESULTS.with_suffix(".md")
    atomic_write(md, "\n".join(lines))
    _plot(res, RESULTS.with_suffix(".png"))
    print(md.read_text())


def _current_peaks(res: dict) -> dict:
    """The planner's largest per-rank peak (MiB) for the P-host runs (``"parts"``) and for one
    process (``"p1"``), from the sizes stored with the results and the planner as of now."""
    from pyg_sar import plan
    cfg = res["config"]
    if "num_features" not in cfg:
        return res.get("plan_peak_mb", {})
    out = {}
    for key, ranks in (("parts", res.get("plan_ranks")),
                       ("p1", [{"num_nodes": cfg["num_nodes"], "num_edges": cfg["num_edges"],
                                "halo_rows": 0, "send_rows": 0}])):
        if not ranks:
            continue
        w = plan.Workload(cfg["num_nodes"], cfg["num_edges"], cfg["num_features"],
                          cfg["num_classes"], cfg["hidden"], cfg["layers"], model="sage",
                          mode="sar", world_size=len(ranks), norm=False,
                          dtype_bytes=4 if cfg["dtype"] == "float32" else 8)
        out[key] = max(r.plan.peak_bytes for r in plan.predict_ranks(w, ranks)) / plan.MB
    return out


def rank_errors(runs: dict, cfg: dict | None = None) -> list[dict]:
    """Per rank of the P-host runs (and the one-process run): measured VmHWM and engine bytes
    sent per epoch (median over the epochs) next to the planner's prediction."""
    import statistics

    from pyg_sar import plan
    out = []
    for name in ("p1", "mpiexec", "torchrun"):
        r = runs.get(name) or {}
        m, pr = r.get("metrics"), r.get("plan_ranks")
        if not m or not pr:
            continue
        if cfg is not None:  # the planner as of now, from the sizes stored with the run
            w = plan.Workload(cfg["num_nodes"], cfg["num_edges"], cfg["num_features"],
                              cfg["num_classes"], cfg["hidden"], cfg["layers"], model="sage",
                              mode="sar", world_size=len(pr), norm=False,
                              pipeline_depth=1 if m["backend"] in ("gloo", "nccl") else 0,
                              dtype_bytes=4 if cfg["dtype"] == "float32" else 8)
            pr = [{**q, "pred_peak_mb": rp.plan.peak_bytes / plan.MB,
                   "pred_bytes": rp.plan.bytes_per_epoch - rp.plan.traffic["allreduce"]}
                  for q, rp in zip(pr, plan.predict_ranks(w, pr))]
        sent = m.get("bytes_sent_per_epoch") or []
        for q in pr:
            k = q["rank"]
            meas = m["peak_rss_mb"][k]
            row = {"run": name, **{x: q[x] for x in ("rank", "num_nodes", "num_edges",
                                                      "halo_rows", "send_rows")},
                   "peak_mb": meas, "pred_peak_mb": q["pred_peak_mb"],
                   "err_peak_pct": 100.0 * (q["pred_peak_mb"] - meas) / meas}
            if sent:
                b = statistics.median(e[k] for e in sent)
                row.update(bytes=b, pred_bytes=q["pred_bytes"],
                           err_bytes_pct=100.0 * (q["pred_bytes"] - b) / b if b else 0.0)
            out.append(row)
    return out


def per_rank_lines(runs: dict, cfg: dict | None = None) -> list[str]:
    rows = rank_errors(runs, cfg)
    if not rows:
        return []
    lines = ["", "Per rank: measured (VmHWM of the rank; engine bytes sent per training step, "
             "median over the epochs) against `pyg_sar.plan.predict_partition` "
             "(error = (predicted - measured) / measured):", "",
             "| run | rank | nodes | in-edges | halo rows | send rows | VmHWM MiB | predicted "
             "MiB | error % | MB sent | predicted MB | error % |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        b = (f"{r['bytes'] / 1e6:.2f} | {r['pred_bytes'] / 1e6:.2f} | "
             f"{r['err_bytes_pct']:+.2f}") if "bytes" in r else "- | - | -"
        lines.append(f"| {r['run']} | {r['rank']} | {r['num_nodes']:,} | {r['num_edges']:,} | "
                     f"{r['halo_rows']:,} | {r['send_rows']:,} | {r['peak_mb']:.0f} | "
                     f"{r['pred_peak_mb']:.0f} | {r['err_peak_pct']:+.1f} | {b} |")
    worst = max(abs(r["err_peak_pct"]) for r in rows)
    lines += ["", f"Largest peak error: {worst:.1f}%."]
    return lines


def _plot(res: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cfg, runs, mib = res["config"], res["runs"], 2**20
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
    labels, values, colors = [], [], []
    plain = runs.get("plain")
    if plain and plain.get("metrics"):
        labels.append("plain PyG\n(no budget)\nVmHWM")
        values.append(plain["metrics"]["peak_rss_mb"][0] * 1e6 / mib)
        colors.append("tab:red")
    pl = runs.get("plain-limited")
    if pl:
        labels.append(f"plain PyG\nin budget\n{'OOM-killed' if pl['oom_kills'] else 'ran'}")
        values.append(pl["cgroup_peak"] / mib)
        colors.append("black")
    for name, color in (("mpiexec", "tab:blue"), ("torchrun", "tab:green")):
        r = runs.get(name)
        if r is None:
            continue
        for h, v in enumerate(r["cgroup_peak"]):
            labels.append(f"{name}\nhost {h}")
            values.append(v / mib)
            colors.append(color)
    ax.bar(range(len(values)), values, color=colors)
    ax.axhline(cfg["budget"] / mib, color="k", ls="--", label="budget per host")
    ax.axhline(0.8 * cfg["budget"] / mib, color="gray", ls=":", label="0.8 x budget")
    ax.set_xticks(range(len(values)), labels, fontsize=6)
    ax.set_ylabel("peak (MiB)")
    ax.legend(fontsize=7)
    ax.set_title("cgroup peak per host (unlimited plain PyG: its VmHWM)", fontsize=9)
    for name, style in (("plain", "k-"), ("p1", "r-"), ("mpiexec", "b--"), ("torchrun", "g:")):
        m = (runs.get(name) or {}).get("metrics")
        if m:
            bx.plot(range(1, len(m["loss"]) + 1), m["loss"], style, label=name, marker="o")
    bx.set_xlabel("epoch")
    bx.set_ylabel("training loss")
    bx.legend(fontsize=7)
    bx.set_title("loss curves (equal)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _plan_peak(text: str, world: int) -> float | None:
    """The predicted per-rank peak (MB) in the planner's output: the ``max peak: rank R, X MB``
    line of a ``--parts`` plan, else the ``sage sar P ...`` row."""
    import re
    found = re.search(r"max peak: rank \d+, ([\d.]+) MB", text)
    if found:
        return float(found.group(1))
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 5 and cols[0] == "sage" and cols[1] == "sar" and cols[2] == str(world):
            return float(cols[4])
    return None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", nargs="*", choices=RUNS, default=[])
    p.add_argument("--report", action="store_true")
    p.add_argument("--dataset", default="rmat")
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--budget", default="1G")
    p.add_argument("--reference-limit", default="6G")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    p.add_argument("--rmat-nodes", type=int, default=None,
                   help="--dataset rmat: nodes (default: pyg_sar's 100,000)")
    p.add_argument("--rmat-edges", type=int, default=None,
                   help="--dataset rmat: requested edges (default: pyg_sar's 1,000,000)")
    p.add_argument("--balance", default="nodes", choices=("nodes", "edges"),
                   help="the partition's balance (pinned: the results name it)")
    p.add_argument("--allocator", default="trim", choices=("trim", "default"),
                   help="trim: glibc returns freed blocks above 128 KiB to the kernel (RSS "
                        "follows live tensors); default: glibc's own thresholds")
    p.add_argument("--work", default="/tmp/limited_hosts")
    p.add_argument("--out", default=str(RESULTS), help="results JSON (.md, .png beside it)")
    a = p.parse_args()
    _set_out(a.out)
    a.budget = parse_size(a.budget)
    a.reference_limit = parse_size(a.reference_limit)
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    if a.runs:
        results = _load()
        config = {"dataset": a.dataset, "hosts": a.hosts, "budget": a.budget,
                  "hidden": a.hidden, "layers": a.layers, "epochs": a.epochs, "dtype": a.dtype,
                  "rmat_nodes": a.rmat_nodes, "rmat_edges": a.rmat_edges,
                  "balance": a.balance, "allocator": a.allocator}
        if {k: results.get("config", {}).get(k) for k in config} != config:
            results = {"runs": {}}  # another configuration: start over
        parts = _parts(a)
        meta = json.loads((parts / "meta.json").read_text())
        results["config"] = {**config, **{k: meta[k] for k in (
            "num_nodes", "num_edges", "num_features", "num_classes")}}
        results["plan"] = _plan(a, parts)  # the planner as of this commit
        results["plan_peak_mb"] = {"parts": _plan_peak(results["plan"]["parts"], a.hosts),
                                   "p1": _plan_peak(results["plan"]["p1"], 1)}
        results["plan_ranks"] = _rank_plan(a, parts, 0)
        _save(results)
        for name in a.runs:
            print(f"--- {name}", flush=True)
            if name == "plain":
                r = run_plain(a, work)
            elif name == "plain-limited":
                r = run_plain_limited(a, work)
            elif name == "p1":
                r = run_p1(a, work)
                r["plan_ranks"] = _rank_plan(a, _parts(a, 1), 0)
            else:
                r = run_hosts(a, work, name, parts)
            results["runs"][name] = r
            _save(results)
            print(json.dumps({k: v for k, v in r.items() if k != "log_tail"}), flush=True)
    if a.report:
        report()


if __name__ == "__main__":
    main()
