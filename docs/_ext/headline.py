"""The README's headline figures, generated from the benchmark results in ``benchmarks/results``.

``python docs/_ext/headline.py --write`` replaces the table between ``<!-- headline:begin -->``
and ``<!-- headline:end -->`` in README.md; the docs test fails when the README's table differs
from the one generated from the JSON files, so the front page quotes the results as measured.
Every figure and its conditions are in ``benchmarks/README.md``.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
README = ROOT / "README.md"
BEGIN, END = "<!-- headline:begin -->", "<!-- headline:end -->"
_MILLION_EDGES = 999_995  # the attention benchmark's "1M" graph has 999,995 edges


def _load(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))


def _span(values: list[float], digits: int = 1) -> str:
    low, high = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return low if low == high else f"{low}-{high}"


def _suite_mb(summary: list[dict], workload: str, model: str, mode: str, p: int) -> float:
    rows = [r for r in summary if (r["workload"], r["model"], r["mode"], r["world_size"])
            == (workload, model, mode, p)]
    if len(rows) != 1:
        raise ValueError(f"suite_full.json: expected one summary row for {workload} {model} "
                         f"{mode} P={p} (got {len(rows)})")
    return rows[0]["peak_growth_mb"]


def headline_table() -> str:
    """The markdown table of headline figures, from the results JSON."""
    rows: list[tuple[str, str]] = []

    ref, dist = _load("train_wordnet_reference"), _load("train_wordnet_p4")
    rows.append((f"WordNet 3.0, 3-layer GraphSAGE, {ref['config']['epochs']} epochs",
                 f"test accuracy {100 * ref['final_test_acc']:.2f}% plain PyG, "
                 f"{100 * dist['final_test_acc']:.2f}% on {dist['world_size']} ranks"))

    summary = _load("suite_full")["summary"]
    mb = {key: _suite_mb(summary, "sbm_dense", "sage", *key)
          for key in (("pyg", 1), ("sar", 1), ("sar", 8), ("halo", 8))}
    rows.append(("Peak memory growth per rank, dense SBM (120k nodes), GraphSAGE",
                 f"plain PyG {mb['pyg', 1]:,.0f} MB at P = 1; pyg_sar {mb['sar', 1]:,.0f} MB at "
                 f"P = 1, {mb['sar', 8]:,.0f} MB at P = 8 (halo mode {mb['halo', 8]:,.0f} MB)"))
    sar, halo = (_suite_mb(summary, "rmat", "gat", mode, 8) for mode in ("sar", "halo"))
    rows.append(("Peak memory growth per rank, R-MAT 262k, GAT, P = 8",
                 f"sar {sar:,.0f} MB vs halo {halo:,.0f} MB ({halo / sar:.1f}x)"))

    cases = [c for c in _load("attention")["cases"] if c["edges"] >= _MILLION_EDGES]
    rows.append(("Fused GAT attention, 1M-4M edges, forward + backward",
                 f"{_span([c['speedup'] for c in cases])}x faster than PyG's `GATConv`, "
                 f"{_span([c['saved_ratio'] for c in cases])}x fewer bytes saved for backward"))

    sampling = _load("sampling")
    rate = {(r["fanout"], r["loader"], r["threads"]): r["batches_per_s"]
            for r in sampling["rows"] if r["workload"] == "wordnet" and r["P"] == 1}
    ours = {k: v for k, v in rate.items() if k[1] == "ours k=16"}
    vs_nl = [v / rate[(f, "PyG NeighborLoader", t)] for (f, _, t), v in ours.items()]
    vs_dgl = [v / rate[(f, "DGL NeighborSampler", t)] for (f, _, t), v in ours.items()]
    trains = [sampling["train"]] + [_load(f"sampling_train_seed{s}")["train"] for s in (1, 2)]
    gap = sum(t["results"]["ours k=16"]["test_acc"] - t["results"]["PyG NeighborLoader"]
              ["test_acc"] for t in trains) / len(trains)
    rows.append(("Bulk sampling, WordNet, k = 16, 1 and 2 threads",
                 f"{_span(vs_nl)}x PyG's `NeighborLoader` and {_span(vs_dgl)}x DGL "
                 f"(minibatches/s); GraphSAGE test accuracy {100 * gap:+.2f} points vs "
                 f"`NeighborLoader` (mean of {len(trains)} seeds)"))

    lines = ["| | |", "|---|---|"] + [f"| {what} | {figure} |" for what, figure in rows]
    return "\n".join(lines)


def marked(text: str) -> str | None:
    begin, end = text.find(BEGIN), text.find(END)
    if begin < 0 or end < begin:
        return None
    return text[begin + len(BEGIN):end].strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="update README.md in place")
    args = parser.parse_args(argv)
    table = headline_table()
    if not args.write:
        print(table)
        return 0
    text = README.read_text(encoding="utf-8")
    begin, end = text.find(BEGIN), text.find(END)
    if begin < 0 or end < begin:
        raise SystemExit(f"README.md has no '{BEGIN}' ... '{END}' markers")
    tmp = README.with_name(f".{README.name}.tmp")
    tmp.write_text(f"{text[:begin + len(BEGIN)]}\n{table}\n{text[end:]}", encoding="utf-8")
    os.replace(tmp, README)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
