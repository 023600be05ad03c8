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

``--hosts 2`` runs the job across network-namespace hosts instead (``pyg_sar.testing.netns``,
needs root; one rank and one ``torchrun --nnodes 2 --max-restarts 1`` agent per host, static
rendezvous on host 0's address), and the fault is a cut link rather than a kill: at the
checkpoint of ``--kill-epoch`` every rank of the first attempt waits while the benchmark sets
host 1's switch port down, then goes on; the link comes back once every rank of the first
attempt has ended (supervision's heartbeat deadline, ``PYG_SAR_DEAD_AFTER_S``, default 45 s,
then its grace exit, ``PYG_SAR_FAILURE_GRACE_S``, 10 s). ``detect_restart_s`` then runs from
the cut, and ``ranks_ended_s`` is the cut to the end of the last rank of the first attempt.
Results: ``benchmarks/results/restart_hosts.{json,md}``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
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
OUT_HOSTS = RESULTS / "restart_hosts.json"
HANG_S = 900  # one launch (hang detector)


def _torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
            "--nproc-per-node=2", "--max-restarts=1", "--monitor-interval=0.1", *args]


RESTART_OPTIONS = ["--max-restarts=1", "--monitor-interval=0.1"]  # torchrun's, per host agent


def _train_args(opts, parts: Path, ck: Path, metrics: Path) -> list[str]:
    return ["--parts", str(parts), "--model", "sage", "--epochs", str(opts.epochs),
            "--checkpoint", str(ck), "--checkpoint-every", str(opts.every), "--resume", "auto",
            "--metrics", str(metrics), "--log-every", "1000", "--progress", "log"]


def _events(stamps: Path) -> list[dict]:
    return [json.loads(line) for f in stamps.iterdir() for line in f.read_text().splitlines()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0] != "Z"
    except (ProcessLookupError, OSError):
        return False


def _paused(stamps: Path) -> int:
    try:
        return sum(e["event"] == "paused" for e in _events(stamps))
    except ValueError:  # a line being written
        return 0


def _first_attempt_pids(stamps: Path) -> list[int]:
    return [int(f.name) for f in stamps.iterdir()
            if any(json.loads(line)["attempt"] == "0" for line in f.read_text().splitlines())]


def _until(condition, what: str, procs) -> None:
    deadline = time.monotonic() + HANG_S
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"restart.py: {what}: not within {HANG_S} s")
        if procs and all(p.poll() is not None for p in procs):
            raise RuntimeError(f"restart.py: the launchers ended before {what}")
        time.sleep(0.02)


def _run_on_hosts(opts, cmd_argv: list[str], env: dict, work: Path, stamps: Path,
                  kill_epoch: int) -> tuple[int, dict]:
    """``cmd_argv`` under one torchrun agent per namespace host; with ``kill_epoch``, host
    1's link is cut at the pause and restored once the first attempt's ranks have ended.
    Returns the first nonzero exit code (else 0) and the cut's timestamps."""
    from pyg_sar.testing.netns import NetnsHosts
    marks: dict = {}
    with NetnsHosts(opts.hosts) as hosts:
        procs = []
        try:
            for h in range(opts.hosts):
                cmd = hosts.torchrun_command(h, [*RESTART_OPTIONS, *cmd_argv])
                with open(work / f"host{h}.log", "wb") as log:
                    procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                                  stdin=subprocess.DEVNULL, env=env,
                                                  start_new_session=True))
            if kill_epoch:
                _until(lambda: _paused(stamps) == opts.hosts, "every rank paused", procs)
                pids = _first_attempt_pids(stamps)
                hosts.set_link(1, False)
                try:
                    marks["cut"] = time.time()
                    (work / "go").write_text("")
                    _until(lambda: not any(_alive(p) for p in pids),
                           "the first attempt's ranks ended", procs)
                    marks["ranks_ended"] = time.time()
                finally:
                    hosts.set_link(1, True)
            deadline = time.monotonic() + HANG_S
            while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
                time.sleep(0.05)
            if any(p.poll() is None for p in procs):
                raise RuntimeError(f"restart.py: the job did not end within {HANG_S} s")
            return next((p.returncode for p in procs if p.returncode), 0), marks
        finally:
            for p in procs:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(timeout=30)


def _run(opts, parts: Path, work: Path, kill_epoch: int) -> dict:
    work.mkdir(parents=True)
    stamps = work / "stamps"
    stamps.mkdir()
    metrics = work / "metrics.json"
    argv = [str(HERE / "restart_victim.py"), str(stamps), str(kill_epoch),
            *_train_args(opts, parts, work / "ck", metrics)]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    marks: dict = {}
    t0 = time.time()
    if opts.hosts:
        for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
            env.pop(k, None)
        env["RESTART_FAULT"] = "cut"
        code, marks = _run_on_hosts(opts, argv, env, work, stamps, kill_epoch)
        tail = "\n".join((work / f"host{h}.log").read_text(errors="replace")[-2000:]
                         for h in range(opts.hosts))
    else:
        done = subprocess.run(_torchrun(*argv), env=env, capture_output=True, text=True,
                              timeout=HANG_S)
        code, tail = done.returncode, done.stderr[-3000:]
    wall = time.time() - t0
    if code != 0:
        raise RuntimeError(f"torchrun failed ({code}):\n{tail}")
    events = _events(stamps)
    history = json.loads(metrics.read_text())["history"]
    out = {"wall_s": wall, "epoch_s": statistics.median(h["step_time_s"] for h in history)}
    if kill_epoch and opts.hosts:
        out["ranks_ended_s"] = marks["ranks_ended"] - marks["cut"]
    if kill_epoch:
        kill = (marks["cut"] if opts.hosts else
                min(e["t"] for e in events if e["event"] == "kill"))
        restarted = min(e["t"] for e in events if e["event"] == "start" and e["attempt"] != "0")
        resumed = max(e["t"] for e in events if e["event"] == "resumed" and e["attempt"] != "0")
        # killed at the checkpoint of kill_epoch, before it is written: the last committed one
        # is kill_epoch - every, so a whole interval of epochs is computed again (worst case)
        out.update(detect_restart_s=restarted - kill, reload_s=resumed - restarted,
                   redone_epochs=opts.every)
    return out


def _summary(rows: list[dict]) -> dict:
    measured = rows[1:] if len(rows) > 1 else rows
    keys = ["detect_restart_s", "reload_s", "redo_s", "overhead_s", "t0_s", "t1_s"]
    if "ranks_ended_s" in measured[0]:
        keys.append("ranks_ended_s")
    med = {k: statistics.median(r[k] for r in measured) for k in keys}
    med["redone_epochs"] = measured[0]["redone_epochs"]
    return med


def report(result: dict) -> str:
    s = result["summary"]
    c = result["config"]
    if c.get("hosts"):
        return "\n".join([
            f"# Restart cost after a cut link, {c['hosts']} namespace hosts, torchrun "
            f"--max-restarts ({c['dataset']}, {c['ranks']} ranks, {c['epochs']} epochs, "
            f"checkpoint every {c['every']}, cut at {c['kill_epoch']}, heartbeat deadline "
            f"{c['dead_after_s']} s, grace {c['grace_s']} s)",
            "",
            "| uninterrupted | cut once | overhead | cut -> ranks ended | cut -> restarted "
            "processes start | reload | epochs redone | redo time |",
            "|---|---|---|---|---|---|---|---|",
            f"| {s['t0_s']:.1f} s | {s['t1_s']:.1f} s | {s['overhead_s']:.1f} s | "
            f"{s['ranks_ended_s']:.1f} s | {s['detect_restart_s']:.1f} s | "
            f"{s['reload_s']:.2f} s | {s['redone_epochs']} | {s['redo_s']:.2f} s |",
            "",
            f"Median of {len(result['runs']) - 1} repeats after one warm-up; "
            f"{result['machine']}.",
            ""])
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
    parser.add_argument("--hosts", type=int, default=0, choices=(0, 2),
                        help="2: across network-namespace hosts (root), the fault a cut link; "
                             "0: one host, the fault a killed rank (default)")
    parser.add_argument("--out", default=None,
                        help=f"default {OUT.relative_to(ROOT)}, with --hosts "
                             f"{OUT_HOSTS.relative_to(ROOT)}")
    parser.add_argument("--report-only", action="store_true")
    opts = parser.parse_args()
    out = Path(opts.out or (OUT_HOSTS if opts.hosts else OUT))
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
    config = {"dataset": "cora", "ranks": 2, "epochs": opts.epochs, "every": opts.every,
              "kill_epoch": opts.kill_epoch,
              "launcher": "torchrun --standalone --max-restarts=1 --monitor-interval=0.1",
              "backend": "gloo"}
    if opts.hosts:
        from pyg_sar.distributed.exit_hooks import GRACE_S
        from pyg_sar.distributed.hub import DEAD_AFTER_S, HEARTBEAT_S
        env = os.environ.get
        config.update(
            hosts=opts.hosts, fault="host 1's link cut at the pause, restored once every "
                                    "rank of the first attempt had ended",
            launcher="one torchrun --nnodes 2 --max-restarts=1 --monitor-interval=0.1 per "
                     "namespace host, static rendezvous on host 0",
            heartbeat_s=float(env("PYG_SAR_HEARTBEAT_S", HEARTBEAT_S)),
            dead_after_s=float(env("PYG_SAR_DEAD_AFTER_S", DEAD_AFTER_S)),
            grace_s=float(env("PYG_SAR_FAILURE_GRACE_S", GRACE_S)))
    result = {"config": config,
              "machine": f"{os.cpu_count()} cores (shared, noisy), {platform.machine()}, "
                         f"Python {platform.python_version()}",
              "runs": runs, "summary": _summary(runs)}
    atomic_write(out, json.dumps(result, indent=1) + "\n")
    atomic_write(out.with_suffix(".md"), report(result))
    print(report(result))


if __name__ == "__main__":
    main()
