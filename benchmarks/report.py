"""Markdown table and goal checks from a suite result (``benchmarks/run.py`` JSON).

    python benchmarks/report.py benchmarks/results/suite_full.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

NAMES = {"pyg": "plain PyG (1 process)", "dgl": "DGL 1.1.3 (1 process)"}


def table(result: dict, workload: str) -> str:
    rows = [s for s in result["summary"] if s["workload"] == workload]
    order = {"pyg": 0, "dgl": 1, "sar": 2, "sa": 3, "halo": 4}
    rows.sort(key=lambda s: (s["model"], s["world_size"], order[s["mode"]]))
    out = ["| model | P | mode | peak RSS growth / rank | saved for backward / rank | "
           "epoch time (median) | of which exchange wait + grad all-reduce | "
           "sent / recv per epoch / rank |",
           "|---|---|---|---|---|---|---|---|"]
    for s in rows:
        comm = s["comm_wait_s"] + s["allreduce_s"]
        traffic = ("—" if s["world_size"] == 1 else
                   f"{s['bytes_sent_mb']:,.0f} / {s['bytes_recv_mb']:,.0f} MB "
                   f"(+{s['allreduce_mb']:.1f} MB grads)")
        out.append(f"| {s['model']} | {s['world_size']} | {NAMES.get(s['mode'], s['mode'])} | "
                   f"{s['peak_growth_mb']:,.0f} MB | {s['saved_mb']:,.0f} MB | "
                   f"{s['epoch_s']:.2f} s | {comm:.2f} s | {traffic} |")
    return "\n".join(out)


def goals(result: dict, workload: str) -> list[str]:
    by = {(s["model"], s["world_size"], s["mode"]): s for s in result["summary"]
          if s["workload"] == workload}
    worlds = sorted({k[1] for k in by})
    lines = []
    for model in ("sage", "gat"):
        base, dgl = by.get((model, 1, "pyg")), by.get((model, 1, "dgl"))
        sar1 = by.get((model, 1, "sar"))
        if base:
            for p in worlds:
                if (model, p, "sar") in by:
                    mem = by[(model, p, "sar")]["peak_growth_mb"]
                    ratio = mem / (base["peak_growth_mb"] / p)
                    own = f", / (SAR P=1 / P) = {mem / (sar1['peak_growth_mb'] / p):.2f}" \
                        if sar1 else ""
                    lines.append(f"{model} P={p}: SAR memory / (PyG single-process / P) = "
                                 f"{ratio:.2f}{own} (goal <= 1.2)")
        if sar1 and dgl:
            lines.append(f"{model} P=1: SAR vs DGL memory {sar1['peak_growth_mb']:.0f} / "
                         f"{dgl['peak_growth_mb']:.0f} MB, time {sar1['epoch_s']:.2f} / "
                         f"{dgl['epoch_s']:.2f} s (goal: at or below DGL)")
        pairs = [p for p in worlds if (model, p, "halo") in by and (model, p, "sar") in by
                 and p > 1]
        if pairs:
            ratios = ", ".join(f"P={p}: {by[(model, p, 'sar')]['epoch_s'] / by[(model, p, 'halo')]['epoch_s']:.2f}"  # noqa: E501
                               for p in pairs)
            lines.append(f"{model}: SAR / halo epoch time {ratios} (goal <= 1.3)")
        top = max((p for p in worlds if (model, p, "halo") in by and (model, p, "sar") in by),
                  default=None)
        if top:
            h, s = by[(model, top, "halo")], by[(model, top, "sar")]
            lines.append(f"{model} P={top}: halo / SAR memory = "
                         f"{h['peak_growth_mb'] / s['peak_growth_mb']:.2f}x "
                         f"(goal at P=8: >= {2 if model == 'sage' else 8}x); SAR / halo epoch "
                         f"time = {s['epoch_s'] / h['epoch_s']:.2f} (goal <= 1.3)")
    k = result.get("kernel")
    if k:
        lines.append(f"gather-aggregate {k['median_gbs']:.2f} GB/s = "
                     f"{100 * k['fraction_of_copy_bw']:.0f}% of the copy bandwidth "
                     f"{result['bandwidth']['median_gbs']:.2f} GB/s (goal >= 50%)")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        raise SystemExit("usage: python benchmarks/report.py RESULT.json")
    result = json.loads(Path(argv[0]).read_text())
    for wl, desc in result["workloads"].items():
        print(f"\n### {wl}: {desc}\n")
        print(table(result, wl))
        print()
        print("\n".join(f"* {g}" for g in goals(result, wl)))
    for f in result.get("failures", []):
        print(f"* FAILED: {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
