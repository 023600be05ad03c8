"""Epoch time and bytes per link against link bandwidth: ranks on network-namespace hosts.

    python benchmarks/network.py                                     # sbm-dense, SAGE, P = 2
    python benchmarks/network.py --worlds 2,4 --modes sar,sa,halo --rates 100mbit,1gbit,none
    python benchmarks/network.py --dataset wordnet --modes sar,halo --rates 100mbit,none --append
    python benchmarks/network.py --modes sar --rates 100mbit,1gbit --epochs 5 \\
        --compressions none,fixed:4,linear:4:1:5 --append          # VARCO-like variable rate
    python benchmarks/network.py --plot-only benchmarks/results/network.json

Each run is ``python -m pyg_sar.train`` with one rank per host (pyg_sar.testing.netns: its own
network namespace and hostname, a veth link through a bridge, ``tbf`` at ``--rates`` on both
ends of every link; ``none`` is the unlimited veth), launched by MPICH's mpiexec (Hydra
starting its proxies inside the namespaces; ranks on TCP) or torchrun (``--launcher``).
Epoch time = median of the training steps after the first (the warm-up); one thread per rank.
Traffic: the engine's bytes per epoch per rank over the same steps (its own counters) and the
bytes every host's link carried during the whole run (switch-port counters: start-up, the final
evaluation, the gradient all-reduce and TCP/IP headers included).

``--compressions`` adds the compression axis (codec ``--codec``, channel truncation by default):
``none`` (full communication), ``fixed:R`` (ratio R throughout) and ``linear:MAX:MIN:STEPS``
(VARCO's variable rate: from MAX to MIN over STEPS optimizer steps). Each row's "vs unlimited"
and "vs full" ratios use rows measured in the same invocation.

Latency is not added: ``tc netem`` needs CONFIG_NET_SCH_NETEM, and NetnsHosts(delay=...) raises
where the kernel lacks it. Needs root (namespaces); writes ``benchmarks/results/network.json``,
``.md`` and ``plots/network.png`` (``--out`` names the JSON; the others go next to it);
``--append`` adds this invocation's rows to an existing JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
CACHE = HERE / ".cache" / "network"
sys.path.insert(0, str(ROOT))

from pyg_sar.files import atomic_write  # noqa: E402
from pyg_sar.testing.netns import (  # noqa: E402
    MPI_ENV,
    NetnsHosts,
    rate_bits,
    run_commands,
    unavailable_reason,
)


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")
           and not k.startswith(("PMI_", "HYDRA_", "TORCHELASTIC_"))}
    env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p))
    env.update(extra)
    return env


def partition(dataset: str, world: int, dataset_args: list[str]) -> Path:
    tag = "-".join([dataset, *[a.replace("=", "") for a in dataset_args]])
    out = CACHE / f"{tag}-{world}"
    if not (out / "meta.json").exists():
        extra = [x for a in dataset_args for x in ("--arg", a)]
        subprocess.run([sys.executable, "-m", "pyg_sar.partition", "--dataset", dataset, *extra,
                        "--num-parts", str(world), "--out", str(out), "--overwrite"],
                       check=True, env=_env(), stdout=subprocess.DEVNULL)
    return out


def compression_flags(spec: str, codec: str) -> list[str]:
    """Training flags for one ``--compressions`` entry: none, fixed:R or linear:MAX:MIN:N."""
    kind, *vals = spec.split(":")
    if kind == "none" and not vals:
        return []
    if kind == "fixed" and len(vals) == 1:
        return ["--compression", codec, "--schedule", "fixed", "--ratio-max", vals[0]]
    if kind == "linear" and len(vals) == 3:
        return ["--compression", codec, "--schedule", "linear", "--ratio-max", vals[0],
                "--ratio-min", vals[1], "--decay-steps", vals[2]]
    raise ValueError(f"--compressions entry {spec!r}: expected none, fixed:R or "
                     "linear:MAX:MIN:STEPS")


def _sent(traffic: dict) -> int:
    return sum(d["sent"] for layer in traffic.values() for d in layer.values())


def run_one(args, parts: Path, world: int, rate: str | None, mode: str, comp: str,
            tmp: Path) -> dict:
    tag = f"{parts.name}-{rate}-{mode}-{comp.replace(':', '_')}"
    metrics = tmp / f"m-{tag}.json"
    metrics.unlink(missing_ok=True)
    argv = ["-m", "pyg_sar.train", "--parts", str(parts), "--model", args.model,
            "--layers", str(args.layers), "--hidden", str(args.hidden), "--mode", mode,
            "--epochs", str(args.epochs), "--eval-every", str(args.epochs), "--norm",
            "batch_norm", "--progress", "log", "--metrics", str(metrics),
            *compression_flags(comp, args.codec)]
    with NetnsHosts(world, rate=rate) as hosts:
        before = hosts.link_bytes()
        if args.launcher == "torchrun":
            cmds = [hosts.torchrun_command(h, argv) for h in range(world)]
            env = _env()
        else:
            cmds = [hosts.mpiexec_command([sys.executable, *argv])]
            env = _env(**MPI_ENV)
        logs = [tmp / f"log-{tag}-{i}.txt" for i in range(len(cmds))]
        start = time.monotonic()
        codes = run_commands(cmds, logs, env=env, timeout=args.timeout)
        wall = time.monotonic() - start
        after = hosts.link_bytes()
    if any(codes) or not metrics.exists():
        tail = "\n".join(p.read_text(errors="replace")[-2000:] for p in logs)
        raise RuntimeError(f"run P={world} rate={rate} mode={mode} compression={comp} failed "
                           f"({codes}):\n{tail}")
    m = json.loads(metrics.read_text())
    measured = m["history"][1:]  # the first step warms up
    steps = [h["step_time_s"] for h in measured]
    step_bytes = [[_sent(t) for t in h["traffic"]] for h in measured]  # [step][rank]
    per_rank = [_sent(t) for t in m["traffic"]["per_rank"]]
    crossed = [{k: a[k] - b[k] for k in a} for a, b in zip(after, before)]
    return dict(P=world, dataset=args.dataset, dataset_args=args.arg, rate=rate or "none",
                mode=mode, compression=comp, launcher=args.launcher, backend=m["backend"],
                epochs=args.epochs, step_times_s=steps,
                epoch_s=statistics.median(steps), epoch_min_s=min(steps),
                epoch_max_s=max(steps), wall_s=wall,
                step_bytes_per_rank=step_bytes,
                engine_bytes_per_epoch_measured=max(statistics.mean(s[r] for s in step_bytes)
                                                    for r in range(world)),
                engine_bytes_per_epoch_per_rank=[b / args.epochs for b in per_rank],
                engine_bytes_total=m["traffic"]["bytes_sent"] + m["traffic"]["eval_bytes_sent"],
                compression_ratio=[h.get("compression_ratio") for h in m["history"]],
                link_bytes=crossed, final_test_acc=m["final_test_acc"],
                loss=[h["loss"] for h in m["history"]])


def _key(r: dict) -> tuple:
    return (r["invocation"], r["dataset"], r["P"], r["mode"])


def _comp_label(c: str) -> str:
    kind, *v = c.split(":")
    if kind == "fixed":
        return f"truncate, fixed {v[0]}x"
    if kind == "linear":
        return f"truncate, linear {v[0]}x to {v[1]}x over {v[2]} steps"
    return "full"


def table(res: dict) -> str:
    c = res["config"]
    lines = [f"{c['layers']}-layer {c['model']} (hidden {c['hidden']}, batch norm), one rank per "
             f"namespace host, launcher {c['launcher']}, epoch time = median of the steps after "
             f"the first; {res['machine']}", ""]
    for i, inv in enumerate(res["invocations"]):
        lines.append(f"* run {i}: `{inv['command']}` (load average {inv['load_average_start']:.1f}"
                     f" at start, {inv.get('load_average_end', float('nan')):.1f} at end)")
    lines += ["", "| run | dataset | P | mode | communication | link rate (each direction) | "
              "epoch time (median, min-max) | vs unlimited | vs full | engine MB sent / epoch / "
              "rank | link MB out of each host, whole run | link bytes / engine bytes | engine "
              "bytes / epoch at the link rate |", "|" + "---|" * 13]
    rows = res["rows"]
    for r in rows:
        base = next((b for b in rows if _key(b) == _key(r) and b["compression"] == r["compression"]
                     and b["rate"] == "none"), None)
        full = next((b for b in rows if _key(b) == _key(r) and b["compression"] == "none"
                     and b["rate"] == r["rate"]), None)
        ratio = f"{r['epoch_s'] / base['epoch_s']:.2f}x" if base else "—"
        vs_full = (f"{r['epoch_s'] / full['epoch_s']:.2f}x"
                   if full and r["compression"] != "none" else "—")
        eng = r["engine_bytes_per_epoch_measured"]
        link = [c_["from_host"] for c_ in r["link_bytes"]]
        at_rate = f"{eng * 8 / rate_bits(r['rate']):.2f} s" if r["rate"] != "none" else "—"
        ds = r["dataset"] + (f" ({', '.join(r['dataset_args'])})" if r["dataset_args"] else "")
        lines.append(
            f"| {r['invocation']} | {ds} | {r['P']} | {r['mode']} | {_comp_label(r['compression'])}"
            f" | {r['rate']} | {r['epoch_s']:.2f} s ({r['epoch_min_s']:.2f}-{r['epoch_max_s']:.2f})"
            f" | {ratio} | {vs_full} | {eng / 1e6:.1f} | "
            f"{' / '.join(f'{b / 1e6:.1f}' for b in link)} | "
            f"{sum(link) / r['engine_bytes_total']:.3f} | {at_rate} |")
    return "\n".join(lines) + "\n"


def plot(res: dict, path: Path) -> str:
    """Epoch time vs link rate: full communication (left) and each compressed run next to the
    full-communication run of its invocation (right, when there are any)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rates = list(dict.fromkeys(r["rate"] for r in res["rows"]))
    series = sorted({(r["dataset"], r["P"], r["mode"], r["compression"], r["invocation"])
                     for r in res["rows"]}, key=str)
    compressed = {s[4] for s in series if s[3] != "none"}
    panels = [[s for s in series if s[4] not in compressed]]
    if compressed:
        panels.append([s for s in series if s[4] in compressed])
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 5), squeeze=False)
    colors = plt.get_cmap("tab10")
    for ax, panel in zip(axes[0], panels):
        for i, key in enumerate(panel):
            rows = {r["rate"]: r for r in res["rows"]
                    if (r["dataset"], r["P"], r["mode"], r["compression"], r["invocation"]) == key}
            xs = [i_ for i_, rate in enumerate(rates) if rate in rows]
            ys = [rows[rates[i_]] for i_ in xs]
            ax.errorbar(xs, [y["epoch_s"] for y in ys],
                        yerr=[[y["epoch_s"] - y["epoch_min_s"] for y in ys],
                              [y["epoch_max_s"] - y["epoch_s"] for y in ys]],
                        marker="o" if key[1] == 2 else "s", capsize=3, color=colors(i % 10),
                        linestyle="-" if key[0] == "sbm-dense" else "--",
                        label=f"{key[0]} P={key[1]} {key[2]}, {_comp_label(key[3])}")
        ax.set_xticks(range(len(rates)), [r if r != "none" else "unlimited" for r in rates])
        ax.set_xlabel("link rate (tbf, each direction)")
        ax.set_ylabel("epoch time (s), median and min-max")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    fig.suptitle(f"{res['config']['layers']}-layer {res['config']['model']} "
                 f"{res['config']['hidden']}: epoch time vs link rate, one rank per namespace host")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="sbm-dense")
    p.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                   help="keyword argument for the dataset loader (repeatable)")
    p.add_argument("--model", default="sage")
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--modes", default="sar")
    p.add_argument("--rates", default="100mbit,1gbit,none")
    p.add_argument("--worlds", default="2")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--compressions", default="none",
                   help="comma list of none, fixed:R, linear:MAX:MIN:STEPS")
    p.add_argument("--codec", default="truncate", choices=("truncate", "subset", "quantize"))
    p.add_argument("--launcher", choices=("mpiexec", "torchrun"), default="mpiexec")
    p.add_argument("--timeout", type=float, default=1200.0, help="hang detector per run")
    p.add_argument("--out", default=str(RESULTS / "network.json"))
    p.add_argument("--append", action="store_true",
                   help="add this invocation's rows to the JSON at --out")
    p.add_argument("--plot-only", default=None)
    args = p.parse_args()
    if args.plot_only:
        res = json.loads(Path(args.plot_only).read_text())
        print(plot(res, Path(args.plot_only).parent / "plots" /
                   f"{Path(args.plot_only).stem}.png"))
        print(table(res))
        return
    reason = unavailable_reason()
    if reason is not None:
        sys.exit(f"benchmarks/network.py: {reason}")
    if args.epochs < 2:
        p.error("--epochs must be >= 2 (the first step is a warm-up)")
    comps = [c for c in args.compressions.split(",") if c]
    for c in comps:
        try:
            compression_flags(c, args.codec)
        except ValueError as e:
            p.error(str(e))
    import torch
    out = Path(args.out)
    config = dict(model=args.model, layers=args.layers, hidden=args.hidden,
                  launcher=args.launcher)
    if args.append and out.exists():
        res = json.loads(out.read_text())
        if res["config"] != config:
            p.error(f"--append: {out} holds config {res['config']}, this run is {config}")
    else:
        res = dict(machine=f"{os.cpu_count()} CPU cores, {platform.machine()}, torch "
                           f"{torch.__version__}", config=config, invocations=[], rows=[])
    inv = dict(command=" ".join(["python benchmarks/network.py", *sys.argv[1:]]),
               load_average_start=os.getloadavg()[0], started=time.strftime("%Y-%m-%d %H:%M"))
    res["invocations"].append(inv)
    index = len(res["invocations"]) - 1
    tmp = CACHE / "runs"
    tmp.mkdir(parents=True, exist_ok=True)
    rates = [None if r == "none" else r for r in args.rates.split(",") if r]
    for world in [int(w) for w in args.worlds.split(",") if w]:
        parts = partition(args.dataset, world, args.arg)
        for mode in [m for m in args.modes.split(",") if m]:
            for rate in rates:
                for comp in comps:
                    row = run_one(args, parts, world, rate, mode, comp, tmp)
                    row["invocation"] = index
                    res["rows"].append(row)
                    print(f"{args.dataset} P={world} mode={mode} rate={rate or 'none'} "
                          f"compression={comp}: epoch {row['epoch_s']:.2f} s, engine "
                          f"{row['engine_bytes_per_epoch_measured'] / 1e6:.1f} MB/epoch/rank",
                          flush=True)
                    atomic_write(out, json.dumps(res, indent=1))
    inv["load_average_end"] = os.getloadavg()[0]
    atomic_write(out, json.dumps(res, indent=1))
    atomic_write(out.with_suffix(".md"), table(res))
    print(plot(res, out.parent / "plots" / f"{out.stem}.png"))
    print(table(res))


if __name__ == "__main__":
    main()
