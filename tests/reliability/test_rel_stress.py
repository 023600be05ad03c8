"""Short CI version of benchmarks/stress.py part 2: repeated shutdown/init in one process
(gloo, plain processes) leaks no file descriptor, thread or memory. The long-run memory check
(hundreds of epochs, P = 4) is the benchmark itself."""
from __future__ import annotations

from pathlib import Path

from pyg_sar.testing import run_on_ranks

STRESS = Path(__file__).resolve().parents[2] / "benchmarks" / "stress.py"


def test_init_shutdown_cycles_leak_nothing():
    ranks = run_on_ranks(f"{STRESS}:init_cycles", 2, launcher="spawn", backend="gloo",
                         kwargs={"cycles": 15}, timeout=300)
    for res in ranks:
        after_warmup, last = res[4], res[-1]
        assert last["fds"] <= after_warmup["fds"], [r["fds"] for r in res]
        assert last["threads"] <= after_warmup["threads"], [r["threads"] for r in res]
        assert last["rss_kib"] <= 1.05 * after_warmup["rss_kib"], [r["rss_kib"] for r in res]
