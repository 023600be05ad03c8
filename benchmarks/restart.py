"""What a failure costs under ``torchrun --max-restarts``: the time to detect a killed rank and
restart the workers, to reload (interpreter, torch, the partition, the checkpoint), and the
epochs computed again, against an uninterrupted run of the same command.

    python benchmarks/restart.py                    # Cora, 2 ranks, GraphSAGE, 3 repeats
    python benchmarks/restart.py --report-only

Each repeat runs, in this order, ``torchrun --standalone --nproc-per-node 2 --max-restarts 1
-m pyg_sar.train --parts P --epochs E --checkpoint-every K --checkpoint DIR --resume auto``
uninterrupted (``T0``), then the same command whose rank 1 SIGKILLs itself in the first attempt
at the checkpoint of epoch ``--kill-epoch`` before it is written (``benchmarks/restart_victim.py``;
the last committed checkpoint is then ``kill_epoch - K``: the worst case, a whole interval of
``K`` epochs computed again), ``T1``. From the victims' timestamps:

* ``detect_restart_s``: the kill to the first restarted process starting (torchrun notices the
  dead worker, stops the other and starts both again);
* ``reload_s``: that start to ``load_checkpoint`` returning on the slower rank (interpreter,
  ``import torch``/PyG/pyg_sar, ``init``, the partition, the checkpoint);
* ``redone_epochs`` and ``redo_s`` (``redone_epochs`` x the uninterrupted run's median epoch
  time from its metrics);
* ``overhead_s`` = ``T1 - T0``.

The first repeat is a warm-up (file cache) and is not counted; the summary is the median of the
others. One host (2 cores, shared: times are noisy), gloo, float32, one thread per rank. Results:
``benchmarks/results/restart.{json,md}``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
OUT = RESULTS / "restart.json"


def _torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
            "--nproc-per-node=2", "--max-restarts=1", "--monitor-interval=0.1", *args]


def _train_args(opts, parts: Path, ck: Path, metrics: Path) -> list[str]:
    return ["--parts", str(parts), "--model", "sage", "--epochs", str(opts.epochs),
            "--checkpoint", str(ck), "--checkpoint-every", str(opts.every), "--resume", "auto",
            "--metrics", str(metrics), "--log-every", "1000", "--progress", "log"]


def _events(stamps: Path) -> list[dict]:
    return [json.loads(line) for f in stamps.iterdir() for line in f.read_text().splitlines()]


def _run(opts, parts: Path, work: Path, kill_epoch: int) -> dict:
    work.mkdir(parents=True)
    stamps = work / "stamps"
    stamps.mkdir()
    metrics = work / "metrics.json"
    cmd = _torchrun(str(HERE / "restart_victim.py"), str(stamps), str(kill_epoch),
                    *_train_args(opts, parts, work / "ck", metrics))
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    t0 = time.time()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    wall = time.time() - t0
    if done.returncode != 0:
        raise RuntimeError(f"torchrun failed ({done.returncode}):\n{done.stderr[-3000:]}")
    events = _events(stamps)
    history = json.loads(metrics.read_text())["history"]
    out = {"wall_s": wall, "epoch_s": statistics.median(h["step_time_s"] for h in history)}
    if kill_epoch:
        kill = min(e["t"] for e in events if e["event"] == "kill")
        restarted = min(e["t"] for e in events if e["event"] == "start" and e["attempt"] != "0")
        resumed = max(e["t"] for e in events if e["event"] == "resumed" and e["attempt"] != "0")
        # killed at the checkpoint of kill_epoch, before it is written: the last committed one
        # is kill_epoch - every, so a whole interval of epochs is computed again (worst case)
        out.update(detect_restart_s=restarted - kill, reload_s=resumed - restarted,
                   redone_epochs=opts.every)
    return out


def _summary(rows: list[dict]) -> dict:
    measured = rows[1:] if len(rows) > 1 else rows
    med = {k: statistics.median(r[k] for r in measured)
           for k in ("detect_restart_s", "reload_s", "redo_s", "overhead_s", "t0_s", "t1_s")}
    med["redone_epochs"] = measured[0]["redone_epochs"]
    return med


def report(result: dict) -> str:
    s = result["summary"]
    c = result["config"]
    return "\n".join([
        f"# Restart cost under torchrun --max-restarts ({c['dataset']}, {c['ranks']} ranks, "
        f"{c['epochs']} epochs, checkpoint every {c['every']}, kill at {c['kill_epoch']})",
        "",
        "| uninterrupted | killed once | overhead | detect + restart | reload | epochs redone "
        "| redo time |",
        "|---|---|---|---|---|---|---|",
        f"| {s['t0_s']:.1f} s | {s['t1_s']:.1f} s | {s['overhead_s']:.1f} s | "
        f"{s['detect_restart_s']:.2f} s | {s['reload_s']:.2f} s | {s['redone_epochs']} | "
        f"{s['redo_s']:.2f} s |",
        "",
        f"Median of {len(result['runs']) - 1} repeats after one warm-up; {result['machine']}.",
        ""])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--kill-epoch", type=int, default=30,
                        help="a checkpoint epoch (a multiple of --every)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--report-only", action="store_true")
    opts = parser.parse_args()
    out = Path(opts.out)
    if opts.kill_epoch % opts.every or not 0 < opts.kill_epoch <= opts.epochs:
        parser.error(f"--kill-epoch {opts.kill_epoch} must be a checkpoint epoch: a multiple "
                     f"of --every {opts.every}, at most --epochs {opts.epochs}")
    if opts.report_only:
        print(report(json.loads(out.read_text())))
        return
    sys.path.insert(0, str(ROOT))
    from pyg_sar.datasets import load_dataset
    from pyg_sar.files import atomic_write
    from pyg_sar.partition import partition_graph
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        parts = partition_graph(load_dataset("cora"), 2, Path(tmp) / "parts", method="metis")
        for i in range(opts.repeats + 1):
            plain = _run(opts, parts, Path(tmp) / f"plain{i}", 0)
            killed = _run(opts, parts, Path(tmp) / f"killed{i}", opts.kill_epoch)
            row = dict(killed, t0_s=plain["wall_s"], t1_s=killed["wall_s"],
                       overhead_s=killed["wall_s"] - plain["wall_s"],
                       redo_s=killed["redone_epochs"] * plain["epoch_s"],
                       epoch_s=plain["epoch_s"])
            runs.append(row)
            print(json.dumps(row), flush=True)
    result = {"config": {"dataset": "cora", "ranks": 2, "epochs": opts.epochs,
                         "every": opts.every, "kill_epoch": opts.kill_epoch,
                         "launcher": "torchrun --standalone --max-restarts=1 "
                                     "--monitor-interval=0.1", "backend": "gloo"},
              "machine": f"{os.cpu_count()} cores (shared, noisy), {platform.machine()}, "
                         f"Python {platform.python_version()}",
              "runs": runs, "summary": _summary(runs)}
    atomic_write(out, json.dumps(result, indent=1) + "\n")
    atomic_write(out.with_suffix(".md"), report(result))
    print(report(result))


if __name__ == "__main__":
    main()
