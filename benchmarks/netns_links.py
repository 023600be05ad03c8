"""Epoch time against link bandwidth: ranks on network-namespace hosts joined by tc-limited links.

    python benchmarks/netns_links.py                                # sbm-dense, SAGE, P = 2
    python benchmarks/netns_links.py --rates 100mbit,1gbit,none --modes sar,sa,halo --worlds 2,4
    python benchmarks/netns_links.py --plot-only benchmarks/results/netns_links.json

Each run is ``python -m pyg_sar.train`` with one rank per host (pyg_sar.testing.netns: its own
network namespace and hostname, a veth link through a bridge, ``tbf`` at ``--rates`` on both
ends of every link; ``none`` is the unlimited veth), launched by MPICH's mpiexec (Hydra
starting its proxies inside the namespaces; ranks on TCP) or torchrun (``--launcher``).
Epoch time = median of the training steps after the first (the warm-up); one thread per rank.
Traffic: the engine's bytes per epoch per rank (its own counters) and the bytes every host's
link carried during the whole run (switch-port counters: start-up, the final evaluation, the
gradient all-reduce and TCP/IP headers included). Needs root (namespaces); writes
``benchmarks/results/netns_links.json``, ``.md`` and ``plots/netns_links.png`` (``--out``
names the JSON; the others go next to it).
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
CACHE = HERE / ".cache" / "netns_links"
sys.path.insert(0, str(ROOT))

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


def partition(dataset: str, world: int) -> Path:
    out = CACHE / f"{dataset}-{world}"
    if not (out / "meta.json").exists():
        subprocess.run([sys.executable, "-m", "pyg_sar.partition", "--dataset", dataset,
                        "--num-parts", str(world), "--out", str(out), "--overwrite"],
                       check=True, env=_env(), stdout=subprocess.DEVNULL)
    return out


def run_one(args, parts: Path, world: int, rate: str | None, mode: str, tmp: Path) -> dict:
    metrics = tmp / f"m-{world}-{rate}-{mode}.json"
    metrics.unlink(missing_ok=True)
    argv = ["-m", "pyg_sar.train", "--parts", str(parts), "--model", args.model,
            "--layers", str(args.layers), "--hidden", str(args.hidden), "--mode", mode,
            "--epochs", str(args.epochs), "--eval-every", str(args.epochs), "--norm",
            "batch_norm", "--progress", "log", "--metrics", str(metrics)]
    with NetnsHosts(world, rate=rate) as hosts:
        before = hosts.link_bytes()
        if args.launcher == "torchrun":
            cmds = [hosts.torchrun_command(h, argv) for h in range(world)]
            env = _env()
        else:
            cmds = [hosts.mpiexec_command([sys.executable, *argv])]
            env = _env(**MPI_ENV)
        logs = [tmp / f"log-{world}-{rate}-{mode}-{i}.txt" for i in range(len(cmds))]
        start = time.monotonic()
        codes = run_commands(cmds, logs, env=env, timeout=args.timeout)
        wall = time.monotonic() - start
        after = hosts.link_bytes()
    if any(codes) or not metrics.exists():
        tail = "\n".join(p.read_text(errors="replace")[-2000:] for p in logs)
        raise RuntimeError(f"run P={world} rate={rate} mode={mode} failed ({codes}):\n{tail}")
    m = json.loads(metrics.read_text())
    steps = [h["step_time_s"] for h in m["history"]][1:]  # the first step warms up
    per_rank = [sum(d["sent"] for layer in t.values() for d in layer.values())
                for t in m["traffic"]["per_rank"]]
    crossed = [{k: a[k] - b[k] for k in a} for a, b in zip(after, before)]
    return dict(P=world, rate=rate or "none", mode=mode, launcher=args.launcher,
                backend=m["backend"], epochs=args.epochs, step_times_s=steps,
                epoch_s=statistics.median(steps), epoch_min_s=min(steps),
                epoch_max_s=max(steps), wall_s=wall,
                engine_bytes_per_epoch_per_rank=[b / args.epochs for b in per_rank],
                engine_bytes_total=m["traffic"]["bytes_sent"] + m["traffic"]["eval_bytes_sent"],
                link_bytes=crossed, final_test_acc=m["final_test_acc"],
                loss=[h["loss"] for h in m["history"]])


def table(res: dict) -> str:
    c = res["config"]
    lines = [f"{c['dataset']}, {c['layers']}-layer {c['model']} (hidden {c['hidden']}, batch "
             f"norm), one rank per namespace host, launcher {c['launcher']}, {c['epochs']} "
             f"epochs (median of the last {c['epochs'] - 1} steps); {res['machine']}", "",
             "| P | mode | link rate (each direction) | epoch time (median, min-max) | vs "
             "unlimited | engine MB sent / epoch / rank | link MB out of each host, whole run "
             "| link bytes / engine bytes | engine bytes / epoch at the link rate |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        base = next((b for b in res["rows"] if b["P"] == r["P"] and b["mode"] == r["mode"]
                     and b["rate"] == "none"), None)
        ratio = f"{r['epoch_s'] / base['epoch_s']:.2f}x" if base else "—"
        eng = max(r["engine_bytes_per_epoch_per_rank"])
        link = [c_["from_host"] for c_ in r["link_bytes"]]
        at_rate = f"{eng * 8 / rate_bits(r['rate']):.2f} s" if r["rate"] != "none" else "—"
        lines.append(
            f"| {r['P']} | {r['mode']} | {r['rate']} | {r['epoch_s']:.2f} s "
            f"({r['epoch_min_s']:.2f}-{r['epoch_max_s']:.2f}) | {ratio} | {eng / 1e6:.1f} | "
            f"{' / '.join(f'{b / 1e6:.1f}' for b in link)} | "
            f"{sum(link) / r['engine_bytes_total']:.3f} | {at_rate} |")
    return "\n".join(lines) + "\n"


def plot(res: dict, path: Path) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rates = list(dict.fromkeys(r["rate"] for r in res["rows"]))
    fig, ax = plt.subplots(figsize=(7, 4))
    for key in sorted({(r["P"], r["mode"]) for r in res["rows"]}):
        rows = {r["rate"]: r for r in res["rows"] if (r["P"], r["mode"]) == key}
        xs = [i for i, rate in enumerate(rates) if rate in rows]
        ax.errorbar(xs, [rows[rates[i]]["epoch_s"] for i in xs],
                    yerr=[[rows[rates[i]]["epoch_s"] - rows[rates[i]]["epoch_min_s"] for i in xs],
                          [rows[rates[i]]["epoch_max_s"] - rows[rates[i]]["epoch_s"] for i in xs]],
                    marker="o", capsize=3, label=f"P = {key[0]}, {key[1]}")
    ax.set_xticks(range(len(rates)), [r if r != "none" else "unlimited" for r in rates])
    ax.set_xlabel("link rate (tbf, each direction)")
    ax.set_ylabel("epoch time (s)")
    ax.set_title(f"{res['config']['dataset']}, {res['config']['model']}: epoch time vs link rate")
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="sbm-dense")
    p.add_argument("--model", default="sage")
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--modes", default="sar")
    p.add_argument("--rates", default="100mbit,1gbit,none")
    p.add_argument("--worlds", default="2")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--launcher", choices=("mpiexec", "torchrun"), default="mpiexec")
    p.add_argument("--timeout", type=float, default=1200.0, help="hang detector per run")
    p.add_argument("--out", default=str(RESULTS / "netns_links.json"))
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
        sys.exit(f"benchmarks/netns_links.py: {reason}")
    if args.epochs < 2:
        p.error("--epochs must be >= 2 (the first step is a warm-up)")
    import torch
    res = dict(machine=f"{os.cpu_count()} CPU cores, {platform.machine()}, torch "
                       f"{torch.__version__}, load average {os.getloadavg()[0]:.1f} at start",
               command=" ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
               config=dict(dataset=args.dataset, model=args.model, layers=args.layers,
                           hidden=args.hidden, epochs=args.epochs, launcher=args.launcher),
               rows=[])
    out = Path(args.out)
    tmp = CACHE / "runs"
    tmp.mkdir(parents=True, exist_ok=True)
    rates = [None if r == "none" else r for r in args.rates.split(",") if r]
    for world in [int(w) for w in args.worlds.split(",") if w]:
        parts = partition(args.dataset, world)
        for mode in [m for m in args.modes.split(",") if m]:
            for rate in rates:
                row = run_one(args, parts, world, rate, mode, tmp)
                res["rows"].append(row)
                print(f"P={world} mode={mode} rate={rate or 'none'}: epoch "
                      f"{row['epoch_s']:.2f} s, engine "
                      f"{max(row['engine_bytes_per_epoch_per_rank']) / 1e6:.1f} MB/epoch/rank",
                      flush=True)
                _write(out, json.dumps(res, indent=1))
    res["load_average_end"] = os.getloadavg()[0]
    _write(out, json.dumps(res, indent=1))
    _write(out.with_suffix(".md"), table(res))
    print(plot(res, out.parent / "plots" / f"{out.stem}.png"))
    print(table(res))


if __name__ == "__main__":
    main()
