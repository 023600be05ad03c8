"""Reliability under CPU load: the whole ``tests/reliability`` folder, many times in a row,
while busy-loop processes compete for the cores.

    python benchmarks/reliability_under_load.py                  # 20 runs, 2 busy loops
    python benchmarks/reliability_under_load.py --runs 3 --busy 4 --stop-on-failure

Each run is ``python -m pytest tests/reliability -q -p no:cacheprovider`` in a fresh process.
The busy loops (``python -c 'while True: pass'``) start before the first run and are killed
after the last one (on Ctrl-C, SIGTERM or an error too, with the run in progress and all it
started). Prints one line per run, then the tally and the total time; writes
``benchmarks/results/reliability_under_load.json`` and keeps the output of every failed run
in ``benchmarks/results/reliability_under_load/run<k>.log``. Exits with status 0 only if every
run passed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"

from pyg_sar.testing.launcher import _kill  # noqa: E402 - after the path is set

BUSY_LOOP = "while True: pass"


def _start_busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", BUSY_LOOP], stdin=subprocess.DEVNULL,
                             start_new_session=True) for _ in range(n)]


def _stop_busy(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
    for p in procs:
        p.wait()


def _summary(output: str) -> str:
    """pytest's last line (``N passed, M failed in S s``), without the '=' padding."""
    lines = [ln.strip("= ") for ln in output.strip().splitlines() if ln.strip()]
    found = [ln for ln in lines if re.search(r"\b(passed|failed|error)", ln)]
    return found[-1] if found else (lines[-1] if lines else "(no output)")


def _terminated(signum, frame) -> None:
    raise SystemExit(f"stopped by signal {signum}")


def _run_pytest(cmd: list[str]) -> tuple[int, str]:
    """One run in its own session, killed with everything it started if this one stops."""
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate()
    except BaseException:
        _kill([proc])
        raise
    return proc.returncode, output


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20, help="runs of the folder (default 20)")
    p.add_argument("--busy", type=int, default=2, help="busy-loop processes (default 2)")
    p.add_argument("--path", default="tests/reliability", help="what pytest runs")
    p.add_argument("--stop-on-failure", action="store_true",
                   help="stop at the first failed run (the count starts again after a fix)")
    p.add_argument("--out", type=Path, default=RESULTS / "reliability_under_load.json")
    args = p.parse_args(argv)
    if args.runs < 1 or args.busy < 0:
        p.error(f"--runs must be >= 1 and --busy >= 0 (got {args.runs}, {args.busy})")
    logs = args.out.with_suffix("")
    cmd = [sys.executable, "-m", "pytest", args.path, "-q", "-p", "no:cacheprovider"]
    runs: list[dict] = []
    start = time.monotonic()
    load_before = os.getloadavg()
    signal.signal(signal.SIGTERM, _terminated)
    busy = _start_busy(args.busy)
    try:
        for k in range(1, args.runs + 1):
            t = time.monotonic()
            status, output = _run_pytest(cmd)
            took = time.monotonic() - t
            failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", output, flags=re.M)
            run = {"run": k, "exit_status": status, "seconds": round(took, 1),
                   "summary": _summary(output), "failed": failed,
                   "load_avg_1min": round(os.getloadavg()[0], 2)}
            runs.append(run)
            if status != 0:
                logs.mkdir(parents=True, exist_ok=True)
                (logs / f"run{k}.log").write_text(output)
            print(f"run {k:2d}/{args.runs}: {'ok  ' if status == 0 else 'FAIL'} "
                  f"{took:6.1f} s  {run['summary']}"
                  + (f"  failed: {', '.join(failed)}" if failed else ""), flush=True)
            if status != 0 and args.stop_on_failure:
                break
    finally:
        _stop_busy(busy)
    total = time.monotonic() - start
    passed = sum(r["exit_status"] == 0 for r in runs)
    result = {"command": " ".join(cmd), "path": args.path, "busy_loops": args.busy,
              "runs_requested": args.runs, "runs_done": len(runs), "runs_passed": passed,
              "total_seconds": round(total, 1), "cpus": os.cpu_count(),
              "load_avg_before": [round(x, 2) for x in load_before], "commit": _commit(),
              "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    os.replace(tmp, args.out)
    print(f"{passed}/{len(runs)} runs passed ({args.runs} requested), {args.busy} busy loops, "
          f"{os.cpu_count()} CPUs, total {total:.0f} s ({total / 60:.1f} min); "
          f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0 if passed == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
