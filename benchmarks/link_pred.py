"""Link-prediction benchmark: pyg_sar at P = 1, 2, 4 against single-process PyG in the same run.

    python benchmarks/link_pred.py                      # Cora and CiteSeer, P = 1, 2, 4
    python benchmarks/link_pred.py --datasets cora --ranks 1,2 --epochs 20   # quick
    python benchmarks/link_pred.py --write-docs         # tables from the committed JSON

Each cell is one run of ``python -m pyg_sar.train --task link`` (a 2-layer GCN encoder, hidden
``--hidden``, dot-product decoder, Adam, ``RandomLinkSplit`` 5% / 10% val / test, one uniform
negative per training positive per epoch keyed by ``(seed, epoch)``, no dropout, so every P
trains on the same pairs): ``--reference`` (plain PyG, whole graph, one process, the same
negatives) and ``mpiexec -n P`` for each P. Per run, from its ``--metrics`` JSON:

* ``test_auc`` / ``test_hits``: the final epoch's test ROC AUC and Hits@K (each test positive
  against the pool of the test split's negative pairs), and ``test_auc_at_best_val``;
* ``epoch_s``: median time of a training step (forward, negatives, loss, backward, gradient
  all-reduce, optimizer) over the epochs after ``--warmup``;
* ``peak_rss_mb``: every rank's peak resident memory (``VmHWM``: the interpreter, torch and
  the data included), and its max over ranks.

Results: ``benchmarks/results/link_pred.json``; ``--write-docs`` writes the Markdown table
between the ``<!-- bench:link_pred:begin -->`` / ``<!-- bench:link_pred:end -->`` markers of
``benchmarks/README.md`` and ``docs/link_prediction.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULT_JSON = HERE / "results" / "link_pred.json"
BEGIN, END = "<!-- bench:link_pred:begin -->", "<!-- bench:link_pred:end -->"
DOC_FILES = (HERE / "README.md", ROOT / "docs" / "link_prediction.md")


def _mpiexec() -> str:
    local = Path(sys.executable).with_name("mpiexec")
    found = str(local) if local.exists() else shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("benchmarks/link_pred.py: mpiexec not found (needed for P > 1)")
    return found


def run_cell(dataset: str, ranks: int | None, args: argparse.Namespace, tmp: Path) -> dict:
    """One training run (``ranks=None``: ``--reference``); its summary."""
    metrics = tmp / f"{dataset}-{ranks or 'ref'}.json"
    cmd = [sys.executable, "-m", "pyg_sar.train", "--task", "link", "--dataset", dataset,
           "--epochs", str(args.epochs), "--hidden", str(args.hidden), "--dropout", "0",
           "--weight-decay", "0", "--lr", str(args.lr), "--seed", str(args.seed),
           "--hits-k", str(args.hits_k), "--log-every", str(args.epochs),
           "--metrics", str(metrics), "--parts-dir", str(tmp / "parts")]
    if ranks is None:
        cmd.append("--reference")
    else:
        cmd = [_mpiexec(), "-n", str(ranks), *cmd]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=args.timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}:\n"
                           f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    m = json.loads(metrics.read_text())
    last = m["history"][-1]
    steps = [h["step_time_s"] for h in m["history"][args.warmup:]] or \
        [h["step_time_s"] for h in m["history"]]
    return dict(ranks=ranks or 1, reference=ranks is None, test_auc=last["test_auc"],
                test_hits=last["test_hits"], val_auc=last["val_auc"],
                test_auc_at_best_val=m["test_auc_at_best_val"],
                final_loss=last["loss"], epoch_s=statistics.median(steps),
                peak_rss_mb=m["peak_rss_mb"], peak_rss_mb_max=max(m["peak_rss_mb"]))


def measure(args: argparse.Namespace) -> dict:
    out = dict(machine=dict(platform=platform.platform(), processor=platform.machine(),
                            cpus=os.cpu_count(), python=platform.python_version()),
               settings=dict(epochs=args.epochs, warmup=args.warmup, hidden=args.hidden,
                             lr=args.lr, seed=args.seed, hits_k=args.hits_k, model="gcn",
                             layers=2, decoder="dot", num_val=0.05, num_test=0.1),
               runs={})
    with tempfile.TemporaryDirectory() as tmpdir:
        for dataset in args.datasets:
            rows = [run_cell(dataset, None, args, Path(tmpdir))]
            for p in args.ranks:
                rows.append(run_cell(dataset, p, args, Path(tmpdir)))
            out["runs"][dataset] = rows
            for r in rows:
                print(f"{dataset:9s} {'PyG' if r['reference'] else 'P=' + str(r['ranks']):5s} "
                      f"test AUC {r['test_auc']:.4f}  Hits@{args.hits_k} "
                      f"{r['test_hits']:.4f}  {r['epoch_s'] * 1e3:.1f} ms/epoch  peak RSS "
                      f"{r['peak_rss_mb_max']:.0f} MB/rank", flush=True)
    return out


def table(result: dict) -> str:
    """The Markdown table of a result."""
    k = result["settings"]["hits_k"]
    lines = [f"| dataset | run | test AUC | test Hits@{k} | test AUC at best val | "
             f"time per epoch (median) | peak RSS per rank (max) |",
             "|---|---|---|---|---|---|---|"]
    for dataset, rows in result["runs"].items():
        for r in rows:
            run = ("plain PyG, 1 process" if r["reference"] else
                   f"pyg_sar, P = {r['ranks']}")
            lines.append(f"| {dataset} | {run} | {r['test_auc']:.4f} | {r['test_hits']:.4f} | "
                         f"{r['test_auc_at_best_val']:.4f} | {r['epoch_s'] * 1e3:.1f} ms | "
                         f"{r['peak_rss_mb_max']:.0f} MB |")
    return "\n".join(lines)


def write_docs(result: dict) -> None:
    from pyg_sar.files import atomic_write
    text = table(result)
    for path in DOC_FILES:
        if not path.exists():
            continue
        doc = path.read_text(encoding="utf-8")
        if BEGIN not in doc or END not in doc:
            continue
        head, rest = doc.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        atomic_write(path, f"{head}{BEGIN}\n{text}\n{END}{tail}")
        print(f"wrote the table into {path.relative_to(ROOT)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=lambda s: s.split(","), default=["cora", "citeseer"])
    parser.add_argument("--ranks", type=lambda s: [int(x) for x in s.split(",")],
                        default=[1, 2, 4])
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hits-k", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--out", type=Path, default=RESULT_JSON)
    parser.add_argument("--write-docs", action="store_true",
                        help="only write the tables from --out into the docs")
    args = parser.parse_args(argv)
    if args.write_docs:
        write_docs(json.loads(args.out.read_text()))
        return
    result = measure(args)
    from pyg_sar.files import atomic_write
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(args.out, json.dumps(result, indent=1))
    print(table(result))


if __name__ == "__main__":
    main()
