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
(VARCO's variable rate: from MAX to MIN over STEPS optimizer steps); and, codec included,
``bf16`` (bf16 wire), ``quant:B`` (B-bit quantisation), ``trunc:R`` (truncation at ratio R;
these two leave the last layer raw, as the training CLI does) and ``auto@T`` (the ``auto``
preset laid out over ``--auto-steps`` steps, trained from its step T: give the first step of
each of its stages to time them). Each row's "vs unlimited" and "vs full" ratios use rows
measured in the same invocation. The analysis under the table (JSON ``analysis``) fits
``epoch = a + b x bytes`` per (partition, rate) through the fixed entries, weights auto's stages
by their share of its schedule (exact for piecewise-constant ratios), predicts the compression
grid's other methods from their bytes, and gives the Amdahl bound.

    python benchmarks/network.py --dataset wordnet --arg svd_dim=64 --hidden 32 --norm none \
        --worlds 4 --method random --rates 100mbit,1gbit --epochs 4 --auto-steps 80 \
        --compressions none,bf16,quant:4,trunc:4,auto@0,auto@28,auto@52,auto@76 \
        --out benchmarks/results/network_compression.json --append

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


def partition(dataset: str, world: int, dataset_args: list[str], method: str = "metis") -> Path:
    tag = "-".join([dataset, *[a.replace("=", "") for a in dataset_args]])
    out = CACHE / (f"{tag}-{world}" if method == "metis" else f"{tag}-{method}-{world}")
    if not (out / "meta.json").exists():
        extra = [x for a in dataset_args for x in ("--arg", a)]
        subprocess.run([sys.executable, "-m", "pyg_sar.partition", "--dataset", dataset, *extra,
                        "--num-parts", str(world), "--method", method, "--out", str(out),
                        "--balance", "nodes", "--overwrite"],  # as the results were made
                       check=True, env=_env(), stdout=subprocess.DEVNULL)
    return out


def compression_flags(spec: str, codec: str, auto_steps: int | None = None) -> list[str]:
    """Training flags for one ``--compressions`` entry: none, fixed:R, linear:MAX:MIN:N (with
    ``codec``), bf16, quant:B, trunc:R, or auto@T (the ``auto`` preset over ``auto_steps``
    steps, started at step T)."""
    if spec.startswith("auto@"):
        t = spec[len("auto@"):]
        if not t.isdigit():
            raise ValueError(f"--compressions entry {spec!r}: expected auto@T, T a step >= 0")
        if auto_steps is not None and int(t) >= auto_steps:
            raise ValueError(f"--compressions entry {spec!r}: T must be < --auto-steps "
                             f"({auto_steps})")
        total = [] if auto_steps is None else ["--compression-total-steps", str(auto_steps)]
        return ["--compression", "auto", *total, "--compression-start-step", t]
    kind, *vals = spec.split(":")
    if kind == "none" and not vals:
        return []
    if kind == "bf16" and not vals:
        return ["--wire-dtype", "bfloat16"]
    if kind == "quant" and len(vals) == 1 and vals[0].isdigit():
        return ["--compression", "quantize", "--bits", vals[0]]
    if kind == "trunc" and len(vals) == 1:
        return ["--compression", "truncate", "--ratio-max", vals[0]]
    if kind == "fixed" and len(vals) == 1:
        return ["--compression", codec, "--schedule", "fixed", "--ratio-max", vals[0]]
    if kind == "linear" and len(vals) == 3:
        return ["--compression", codec, "--schedule", "linear", "--ratio-max", vals[0],
                "--ratio-min", vals[1], "--decay-steps", vals[2]]
    raise ValueError(f"--compressions entry {spec!r}: expected none, fixed:R, "
                     "linear:MAX:MIN:STEPS, bf16, quant:B, trunc:R or auto@T")


def _sent(traffic: dict) -> int:
    return sum(d["sent"] for layer in traffic.values() for d in layer.values())


def run_one(args, parts: Path, world: int, rate: str | None, mode: str, comp: str,
            tmp: Path) -> dict:
    tag = f"{parts.name}-{rate}-{mode}-{comp.replace(':', '_').replace('@', '_')}"
    metrics = tmp / f"m-{tag}.json"
    metrics.unlink(missing_ok=True)
    argv = ["-m", "pyg_sar.train", "--parts", str(parts), "--model", args.model,
            "--layers", str(args.layers), "--hidden", str(args.hidden), "--mode", mode,
            "--epochs", str(args.epochs), "--eval-every", str(args.epochs), "--norm",
            args.norm, "--progress", "log", "--metrics", str(metrics),
            *compression_flags(comp, args.codec, args.auto_steps)]
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
    return dict(P=world, dataset=args.dataset, dataset_args=args.arg, method=args.method,
                norm=args.norm, rate=rate or "none", mode=mode, compression=comp,
                launcher=args.launcher, backend=m["backend"],
                epochs=args.epochs, step_times_s=steps,
                epoch_s=statistics.median(steps), epoch_min_s=min(steps),
                epoch_max_s=max(steps), wall_s=wall,
                step_bytes_per_rank=step_bytes,
                engine_bytes_per_epoch_measured=max(statistics.mean(s[r] for s in step_bytes)
                                                    for r in range(world)),
                engine_bytes_per_epoch_per_rank=[b / args.epochs for b in per_rank],
                engine_bytes_total=m["traffic"]["bytes_sent"] + m["traffic"]["eval_bytes_sent"],
                compression_ratio=[h.get("compression_ratio") for h in m["history"]],
                auto_steps=args.auto_steps if comp.startswith("auto@") else None,
                link_bytes=crossed, final_test_acc=m["final_test_acc"],
                loss=[h["loss"] for h in m["history"]])


def _key(r: dict) -> tuple:
    return (r["invocation"], r["dataset"], r.get("method", "metis"), r["P"], r["mode"])


def _comp_label(c: str) -> str:
    if c.startswith("auto@"):
        return f"auto from step {c[5:]}"
    kind, *v = c.split(":")
    if kind == "bf16":
        return "bf16 wire"
    if kind == "quant":
        return f"quantize, fixed {v[0]} bits"
    if kind == "trunc":
        return f"truncate, fixed {v[0]}x"
    if kind == "fixed":
        return f"truncate, fixed {v[0]}x"
    if kind == "linear":
        return f"truncate, linear {v[0]}x to {v[1]}x over {v[2]} steps"
    return "full"


def table(res: dict) -> str:
    c = res["config"]
    norm = "batch norm" if c.get("norm", "batch_norm") == "batch_norm" else "no norm"
    lines = [f"{c['layers']}-layer {c['model']} (hidden {c['hidden']}, {norm}), one rank per "
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
        ds += f", {r['method']}" if r.get("method", "metis") != "metis" else ""
        lines.append(
            f"| {r['invocation']} | {ds} | {r['P']} | {r['mode']} | {_comp_label(r['compression'])}"
            f" | {r['rate']} | {r['epoch_s']:.2f} s ({r['epoch_min_s']:.2f}-{r['epoch_max_s']:.2f})"
            f" | {ratio} | {vs_full} | {eng / 1e6:.1f} | "
            f"{' / '.join(f'{b / 1e6:.1f}' for b in link)} | "
            f"{sum(link) / r['engine_bytes_total']:.3f} | {at_rate} |")
    analysis = res.get("analysis")
    if analysis:
        lines += ["", *analysis_lines(analysis)]
    return "\n".join(lines) + "\n"


def _fixed_entry(c: str) -> bool:
    return c in ("none", "bf16") or c.split(":")[0] in ("quant", "trunc", "fixed")


def _grid_bytes_rel(dataset: str, dataset_args: list[str], method: str, world: int) -> dict:
    """Bytes relative to full per method of the compression grid's matching workload
    (``benchmarks/results/compression_real.json``, GraphSAGE), if it has one."""
    svd = [a.split("=", 1)[1] for a in dataset_args if a.startswith("svd_dim=")]
    path = RESULTS / "compression_real.json"
    if not svd or not path.exists():
        return {}
    workload = f"{dataset}-svd{svd[0]}-{method}-p{world}"
    try:
        summary = json.loads(path.read_text()).get("summary", [])
    except ValueError:
        return {}
    return {s["method"]: s["bytes_rel"] for s in summary
            if s.get("workload") == workload and s.get("model") == "sage"
            and isinstance(s.get("bytes_rel"), (int, float))}


def analyse(res: dict) -> list[dict]:
    """Per (dataset, partition, P, mode, rate) with compressed runs: the least-squares line
    ``epoch = a + b * bytes`` through the fixed runs (engine bytes per epoch and rank), auto's
    stage-weighted epoch and bytes (weights = each stage's share of the auto schedule's steps,
    exact for a piecewise-constant schedule), that line checked against auto's stages, the
    grid's other methods predicted by it, and the Amdahl bound: with a byte fraction ``f`` the
    epoch is at best ``1 - share * (1 - f)`` of full's, ``share`` being the communication share
    of full's epoch (from the line: ``b * bytes_full / epoch_full``; from the unlimited link
    where it was run: ``1 - epoch_unlimited / epoch_full``)."""
    groups: dict[tuple, dict[str, dict]] = {}
    for r in res["rows"]:  # the latest row of each entry wins
        key = (r["dataset"], tuple(r["dataset_args"]), r.get("method", "metis"), r["P"],
               r["mode"], r["rate"])
        groups.setdefault(key, {})[r["compression"]] = r
    out = []
    for key, rows in groups.items():
        dataset, dargs, method, world, mode, rate = key
        full = rows.get("none")
        if rate == "none" or full is None or len(rows) < 2:
            continue
        fixed = [(r["engine_bytes_per_epoch_measured"], r["epoch_s"], c)
                 for c, r in rows.items() if _fixed_entry(c)]
        bfull, tfull = full["engine_bytes_per_epoch_measured"], full["epoch_s"]
        item = dict(dataset=dataset, dataset_args=list(dargs), method=method, P=world,
                    mode=mode, rate=rate, full_epoch_s=tfull, full_bytes=bfull,
                    runs={c: dict(epoch_s=r["epoch_s"], bytes=r["engine_bytes_per_epoch_measured"],
                                  bytes_rel=r["engine_bytes_per_epoch_measured"] / bfull,
                                  vs_full=r["epoch_s"] / tfull) for c, r in rows.items()})
        xs = [x for x, _, _ in fixed]
        if len(set(xs)) >= 2:
            mx, my = statistics.mean(xs), statistics.mean(y for _, y, _ in fixed)
            b = (sum((x - mx) * (y - my) for x, y, _ in fixed)
                 / sum((x - mx) ** 2 for x in xs))
            a = my - b * mx
            item["fit"] = dict(a_s=a, b_s_per_mb=b * 1e6, points=[c for _, _, c in fixed],
                               residuals_s={c: y - (a + b * x) for x, y, c in fixed})
            item["share_fit"] = b * bfull / tfull
        unl = groups.get((dataset, dargs, method, world, mode, "none"), {}).get("none")
        if unl is not None:
            item["unlimited_epoch_s"] = unl["epoch_s"]
            item["share_unlimited"] = 1 - unl["epoch_s"] / tfull
        autos = sorted(((int(c[5:]), r) for c, r in rows.items() if c.startswith("auto@")),
                       key=lambda p: p[0])
        total = next((r.get("auto_steps") for _, r in autos if r.get("auto_steps")), None)
        if autos and total and autos[0][0] == 0:
            ends = [t for t, _ in autos[1:]] + [total]
            w = [(e - t) / total for (t, _), e in zip(autos, ends)]
            t_auto = sum(wi * r["epoch_s"] for wi, (_, r) in zip(w, autos))
            f_auto = sum(wi * r["engine_bytes_per_epoch_measured"]
                         for wi, (_, r) in zip(w, autos)) / bfull
            item["auto"] = dict(total_steps=total, starts=[t for t, _ in autos], weights=w,
                                epoch_s=t_auto, vs_full=t_auto / tfull, bytes_rel=f_auto,
                                stage_epoch_s=[r["epoch_s"] for _, r in autos])
            if "fit" in item:
                a, b = item["fit"]["a_s"], item["fit"]["b_s_per_mb"] / 1e6
                item["auto"]["fit_residuals_s"] = [
                    r["epoch_s"] - (a + b * r["engine_bytes_per_epoch_measured"])
                    for _, r in autos]
            for label in ("share_fit", "share_unlimited"):
                if label in item:
                    sh = item[label]
                    item["auto"][f"amdahl_best_vs_full_{label[6:]}"] = 1 - sh * (1 - f_auto)
            item["auto"]["share_needed_for_half"] = (1 / (2 - 2 * f_auto) if f_auto < 1
                                                     else float("inf"))
        if "fit" in item:
            a, b = item["fit"]["a_s"], item["fit"]["b_s_per_mb"] / 1e6
            item["predicted"] = {m: dict(bytes_rel=f, epoch_s=a + b * f * bfull,
                                         vs_full=(a + b * f * bfull) / tfull)
                                 for m, f in _grid_bytes_rel(dataset, list(dargs), method,
                                                             world).items()}
        out.append(item)
    return out


def analysis_lines(analysis: list[dict]) -> list[str]:
    """Markdown for :func:`analyse`."""
    lines = ["Compression at a limited link (per partition and rate). *Fit*: least squares "
             "`epoch = a + b x MB` through the fixed runs (engine MB per epoch and rank). "
             "*auto*: the epochs of its stages (each measured from its first step) weighted by "
             "the stages' share of the schedule. *Amdahl*: with byte fraction f the epoch is at "
             "best `1 - share x (1 - f)` of full's, and 0.5x needs `share >= 1 / (2 - 2f)`; share "
             "= the communication share of full's epoch (from the fit, and from the unlimited "
             "link where it was run). *Predicted* rows use the fit and the grid's bytes, not a "
             "measurement.", ""]
    for it in analysis:
        args = f" ({', '.join(it['dataset_args'])})" if it["dataset_args"] else ""
        head = (f"**{it['dataset']}{args}, {it['method']}, "
                f"P={it['P']}, {it['mode']}, {it['rate']}**: full {it['full_epoch_s']:.2f} "
                f"s/epoch, "
                f"{it['full_bytes'] / 1e6:.1f} MB/epoch/rank")
        if "unlimited_epoch_s" in it:
            head += (f"; unlimited link {it['unlimited_epoch_s']:.2f} s (communication share "
                     f"{it['share_unlimited']:.2f})")
        if "fit" in it:
            f = it["fit"]
            head += (f"; fit a = {f['a_s']:.2f} s, b = {f['b_s_per_mb']:.3f} s/MB (share "
                     f"{it['share_fit']:.2f}; residuals "
                     + ", ".join(f"{c} {v:+.2f}" for c, v in f["residuals_s"].items()) + " s)")
        lines += [head, "", "| entry | epoch s | vs full | bytes vs full |", "|---|---|---|---|"]
        for c, r in it["runs"].items():
            lines.append(f"| {_comp_label(c)} | {r['epoch_s']:.2f} | {r['vs_full']:.2f}x | "
                         f"{r['bytes_rel'] * 100:.1f}% |")
        au = it.get("auto")
        if au:
            res_text = (", fit residuals " + " / ".join(f"{v:+.2f}" for v in
                                                         au["fit_residuals_s"]) + " s"
                        if "fit_residuals_s" in au else "")
            amd = [f"{au[k]:.2f}x ({k.rsplit('_', 1)[1]} share)" for k in
                   ("amdahl_best_vs_full_fit", "amdahl_best_vs_full_unlimited") if k in au]
            lines.append(f"| **auto, stage-weighted** (stages from steps {au['starts']} of "
                         f"{au['total_steps']}, weights "
                         f"{', '.join(f'{w:.2f}' for w in au['weights'])}{res_text}) | "
                         f"{au['epoch_s']:.2f} | **{au['vs_full']:.2f}x** | "
                         f"{au['bytes_rel'] * 100:.1f}% |")
            lines.append(f"| Amdahl best at auto's bytes: {', '.join(amd) or '—'}; 0.5x needs "
                         f"a share >= {au['share_needed_for_half']:.2f} | | | |")
        for m, r in it.get("predicted", {}).items():
            lines.append(f"| {m} (grid bytes), *predicted* | {r['epoch_s']:.2f} | "
                         f"{r['vs_full']:.2f}x | {r['bytes_rel'] * 100:.1f}% |")
        lines.append("")
    return lines


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
                   help="comma list of none, fixed:R, linear:MAX:MIN:STEPS (with --codec), "
                        "bf16, quant:B, trunc:R, auto@T")
    p.add_argument("--auto-steps", type=int, default=None,
                   help="total steps of the auto preset's schedule in auto@T runs (its "
                        "training's epochs; the run itself trains --epochs from step T)")
    p.add_argument("--norm", choices=("none", "batch_norm"), default="batch_norm")
    p.add_argument("--method", choices=("metis", "random"), default="metis",
                   help="partition method")
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
        res["analysis"] = analyse(res)
        atomic_write(Path(args.plot_only).with_suffix(".md"), table(res))
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
            compression_flags(c, args.codec, args.auto_steps)
        except ValueError as e:
            p.error(str(e))
    import torch
    out = Path(args.out)
    config = dict(model=args.model, layers=args.layers, hidden=args.hidden,
                  launcher=args.launcher, norm=args.norm)
    if args.append and out.exists():
        res = json.loads(out.read_text())
        if {"norm": "batch_norm", **res["config"]} != config:  # older files: batch norm
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
        parts = partition(args.dataset, world, args.arg, args.method)
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
    res["analysis"] = analyse(res)
    atomic_write(out, json.dumps(res, indent=1))
    atomic_write(out.with_suffix(".md"), table(res))
    print(plot(res, out.parent / "plots" / f"{out.stem}.png"))
    print(table(res))


if __name__ == "__main__":
    main()
