"""Time and peak memory of partitioning a large graph: today's in-memory path against the
streaming writer, on R-MAT graphs stored as ``NpySource`` folders (``make_rmat_source.py``).

Every run is a fresh subprocess in its own memory cgroup with a hard limit, so its peak is the
process's own: the cgroup's ``max_usage`` (which counts page cache: the memory-mapped input and
the files written), the largest anonymous memory (``rss`` of the cgroup's ``memory.stat``, sampled
every 0.2 s by this parent) and the process's ``VmHWM``; a run the kernel's OOM killer ends is
recorded as such (``oom_kill`` counter of the cgroup), with the time it had run.

* ``--path memory``: load the folder into a PyG ``Data`` (as a user of today's API must) and
  call ``write_partition``; the loaded graph counts in the peak (``rss_before_gib`` says how much).
* ``--path streaming``: ``write_partition_streaming`` on the folder, time per pass as reported.

    python benchmarks/partition_scale.py --source DIR --path memory --method metis --parts 4 \
        --memory-limit-gb 10 [--balance nodes] [--out results/partition_scale_stream.json]
    python benchmarks/partition_scale.py --report-only   # regenerate .md and .png from the JSON

Runs are appended to the JSON (atomically, after each run; a run with the same key replaces
the old one). Graph generation is not counted (``make_rmat_source.py`` records its own).
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DEFAULT_OUT = RESULTS / "partition_scale_stream.json"
POLL_S = 0.2


# ----------------------------------------------------------------------------- child process
def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not found in /proc/self/status")


def _load_data(source: Path):
    """The folder as a PyG ``Data`` in memory: what today's ``write_partition`` needs."""
    import numpy as np
    import torch
    from torch_geometric.data import Data

    meta = json.loads((source / "source.json").read_text())
    data = Data(num_nodes=int(meta["num_nodes"]))
    data.edge_index = torch.from_numpy(np.load(source / "edge_index.npy")).long()
    for key in ("x", "y", "train_mask", "val_mask", "test_mask"):
        if (source / f"{key}.npy").exists():
            data[key] = torch.from_numpy(np.load(source / f"{key}.npy"))
    return data


def _stats(values: list[int]) -> dict:
    mean = sum(values) / len(values)
    return {"max": max(values), "mean": round(mean, 1),
            "max_over_mean": round(max(values) / mean, 4) if mean else None}


def _trace_phases(t0: float) -> None:
    """Print a line with the time and RSS when each step of today's path starts and ends, so a
    run killed for memory shows in its log how far it got (benchmark-only wrapping)."""
    import pymetis

    from pyg_sar.partition import metis, writer

    def wrap(owner, name: str, label: str) -> None:
        inner = getattr(owner, name)

        def traced(*a, **k):
            print(f"[{time.perf_counter() - t0:7.1f} s, RSS "
                  f"{_status_kib('VmRSS') / 2 ** 20:.2f} GiB] {label} starts", flush=True)
            out = inner(*a, **k)
            print(f"[{time.perf_counter() - t0:7.1f} s, RSS "
                  f"{_status_kib('VmRSS') / 2 ** 20:.2f} GiB] {label} done", flush=True)
            return out
        setattr(owner, name, traced)

    wrap(writer, "assign_parts", "assign (METIS incl. its CSR)")
    wrap(metis, "symmetric_csr", "symmetric CSR for METIS")
    wrap(pymetis, "part_graph", "pymetis.part_graph")
    if hasattr(metis, "_part_graph_c"):  # the two-constraint call (balance="edges")
        wrap(metis, "_part_graph_c", "METIS through ctypes")
    wrap(writer, "Layout", "layout")
    wrap(writer, "staged_dir", "write")


def child(args: argparse.Namespace) -> None:
    """One partitioning run; writes its measurements as JSON to ``args.child_out``."""
    out_dir = Path(args.work) / f"parts_{uuid.uuid4().hex[:8]}"
    scratch = Path(args.work) / f"scratch_{uuid.uuid4().hex[:8]}"
    record: dict = {}
    import torch  # noqa: F401 (imported before the clock starts: load_s is the graph's load)
    import torch_geometric  # noqa: F401
    t0 = time.perf_counter()
    if args.path == "memory":
        from pyg_sar.partition import write_partition

        data = _load_data(Path(args.source))
        record["load_s"] = round(time.perf_counter() - t0, 3)
        kwargs = {}
        if "balance" in inspect.signature(write_partition).parameters:
            kwargs["balance"] = args.balance
        elif args.balance != "nodes":
            raise SystemExit("write_partition has no balance argument: only --balance nodes")
        print(f"loaded in {record['load_s']} s; write_partition", flush=True)
        _trace_phases(t0)
        rss_before = _status_kib("VmRSS")
        t = time.perf_counter()
        report = write_partition(data, args.parts, out_dir, method=args.method, seed=args.seed,
                                 **kwargs)
    else:
        from pyg_sar.partition.stream import write_partition_streaming

        rss_before = _status_kib("VmRSS")
        kwargs = {"method": args.method, "balance": args.balance, "seed": args.seed,
                  "scratch": scratch}
        params = inspect.signature(write_partition_streaming).parameters
        if args.threads and "threads" in params:
            kwargs["threads"] = args.threads
        if args.chunk_edges and "chunk_edges" in params:
            kwargs["chunk_edges"] = args.chunk_edges
        try:  # the writer's own estimate of its peak (what memory_budget is checked against)
            from pyg_sar.partition.stream import estimate_memory
            src = json.loads((Path(args.source) / "source.json").read_text())
            record["estimated_peak_gib"] = round(estimate_memory(
                int(src["num_nodes"]), int(src["num_edges"]), args.parts, args.method,
                args.chunk_edges or 8_000_000) / 2 ** 30, 3)
        except (ImportError, TypeError, KeyError):
            pass
        t = time.perf_counter()
        report = write_partition_streaming(Path(args.source), args.parts, out_dir, **kwargs)
    record["time_s"] = round(time.perf_counter() - t, 3)
    record["phase_s"] = {k: round(float(v), 3) for k, v in report.timings.items()}
    hwm = _status_kib("VmHWM")
    disk = sum(f.stat().st_size for f in out_dir.rglob("*") if f.is_file())
    edges = report.part_num_edges
    record.update({
        "vmhwm_gib": round(hwm / 2 ** 20, 3),
        "rss_before_gib": round(rss_before / 2 ** 20, 3),
        "vmhwm_increase_gib": round((hwm - rss_before) / 2 ** 20, 3),
        "num_nodes": int(report.num_nodes), "num_edges": int(report.num_edges),
        "edge_cut": int(report.edge_cut),
        "edge_cut_fraction": round(report.edge_cut / max(report.num_edges, 1), 4),
        "part_num_nodes": list(report.part_num_nodes), "part_num_edges": list(edges),
        "halo_rows": list(report.recv_rows), "halo_rows_sum": int(sum(report.recv_rows)),
        "nodes": _stats(list(report.part_num_nodes)), "in_edges": _stats(list(edges)),
        "disk_gib": round(disk / 2 ** 30, 3),
    })
    meta_path = out_dir / "meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        for key in ("balance", "partitioner", "stream"):
            if key in meta:
                record[f"meta_{key}"] = meta[key]
    print(report.summary(), flush=True)
    shutil.rmtree(out_dir, ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)
    tmp = Path(args.child_out + ".tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, args.child_out)


# ------------------------------------------------------------------------ cgroup (v1 and v2)
class MemoryGroup:
    """A child memory cgroup of this process's own, limited to ``limit_bytes`` without swap."""

    def __init__(self, limit_bytes: int) -> None:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        v1 = [ln.split(":", 2)[2] for ln in lines if ln.split(":", 2)[1] == "memory"]
        name = f"partition_scale_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        if v1:
            self.v2 = False
            self.path = Path("/sys/fs/cgroup/memory" + v1[0]) / name
        else:
            own = [ln.split(":", 2)[2] for ln in lines if ln.startswith("0::")][0]
            self.v2 = True
            self.path = Path("/sys/fs/cgroup" + own) / name
        self.path.mkdir()
        if self.v2:
            (self.path / "memory.max").write_text(str(limit_bytes))
            (self.path / "memory.swap.max").write_text("0")
        else:
            (self.path / "memory.limit_in_bytes").write_text(str(limit_bytes))
            try:
                (self.path / "memory.memsw.limit_in_bytes").write_text(str(limit_bytes))
            except OSError:  # no swap accounting: nothing to limit
                pass

    def join(self) -> None:
        """Move the calling process into the group (used as ``preexec_fn``)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def anon_bytes(self) -> int:
        stat = dict(ln.split() for ln in (self.path / "memory.stat").read_text().splitlines())
        return int(stat["anon"] if self.v2 else stat["total_rss"])

    def peak_bytes(self) -> int | None:
        name = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        try:
            return int((self.path / name).read_text())
        except OSError:  # memory.peak needs Linux 5.19
            return None

    def oom_kills(self) -> int:
        name = "memory.events" if self.v2 else "memory.oom_control"
        for line in (self.path / name).read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0

    def close(self) -> None:
        for _ in range(50):
            pids = (self.path / "cgroup.procs").read_text().split()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        try:
            self.path.rmdir()
        except OSError:
            pass


def _proc_hwm_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def run_one(args: argparse.Namespace) -> dict:
    """Start one child run in a fresh cgroup and return its record (measured failure or not)."""
    limit = int(args.memory_limit_gb * 2 ** 30)
    group = MemoryGroup(limit)
    child_out = Path(args.work) / f"child_{uuid.uuid4().hex[:8]}.json"
    log_path = Path(args.work) / f"child_{child_out.stem}.log"
    cmd = [sys.executable, __file__, "--child-out", str(child_out), "--source", args.source,
           "--path", args.path, "--method", args.method, "--balance", args.balance,
           "--parts", str(args.parts), "--seed", str(args.seed), "--work", args.work,
           "--threads", str(args.threads), "--chunk-edges", str(args.chunk_edges)]
    peaks = {"anon": 0, "hwm_kib": 0}
    # The machine's 1-min load average (other jobs): KaMinPar's threads wait actively, so a
    # run on oversubscribed cores is several times slower; recorded with every run.
    loads = [os.getloadavg()[0]]
    start = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=group.join, cwd=ROOT)
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                peaks["anon"] = max(peaks["anon"], group.anon_bytes())
                hwm = _proc_hwm_kib(proc.pid)
                if hwm:
                    peaks["hwm_kib"] = max(peaks["hwm_kib"], hwm)
                if time.perf_counter() - start >= 5 * len(loads):
                    loads.append(os.getloadavg()[0])
                stop.wait(POLL_S)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            rc = proc.wait(timeout=args.timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
            timed_out = True
        elapsed = time.perf_counter() - start
        stop.set()
        sampler.join()
    oom = group.oom_kills()
    peak = group.peak_bytes()
    group.close()
    record = {
        "path": args.path, "method": args.method, "balance": args.balance,
        "num_parts": args.parts, "seed": args.seed, "threads": args.threads,
        "memory_limit_gib": args.memory_limit_gb,
        "wall_s": round(elapsed, 2), "returncode": rc, "oom_kills": oom,
        "cgroup_peak_gib": round(peak / 2 ** 30, 3) if peak is not None else None,
        "anon_peak_gib": round(peaks["anon"] / 2 ** 30, 3),
        "vmhwm_sampled_gib": round(peaks["hwm_kib"] / 2 ** 20, 3),
        "load_avg_1min": {"start": round(loads[0], 2), "max": round(max(loads), 2),
                          "mean": round(sum(loads) / len(loads), 2)},
    }
    if child_out.exists():
        record.update(json.loads(child_out.read_text()))
        child_out.unlink()
    record["status"] = ("ok" if rc == 0 and "time_s" in record else
                        "timeout" if timed_out else
                        "oom-killed" if oom else f"failed (rc {rc})")
    tail = log_path.read_text().splitlines()[-30:]
    record["log_tail"] = tail if record["status"] != "ok" else tail[-20:]
    log_path.unlink()
    return record


# -------------------------------------------------------------------------- results, report
def _key(run: dict) -> tuple:
    return (run["graph"]["num_edges_requested"], run["path"], run["method"], run["balance"],
            run["num_parts"], run.get("repeat", 0))


def _save(out: Path, result: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp, out)


def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def write_report(out: Path, result: dict) -> None:
    """The ``.md`` table and (if matplotlib is there) the ``.png`` plot next to ``out``."""
    rows = sorted(result["runs"], key=lambda r: (r["graph"]["num_edges_requested"], r["path"],
                                                 r["method"], r["balance"], r["num_parts"],
                                                 r.get("when_utc", "")))
    lines = [
        "# Partitioning at scale: in-memory path vs streaming writer",
        "",
        "Generated by `benchmarks/partition_scale.py` from `" + out.name + "`. Each run: a fresh "
        "process in its own memory cgroup with the limit shown. *cgroup peak* counts page cache "
        "(the memory-mapped input, the files written); *anon peak* is the cgroup's anonymous "
        "memory sampled every 0.2 s; *VmHWM* is the process's peak RSS (the memory path's "
        "includes the loaded graph). Cut as a fraction of edges; balance as max/mean per part.",
        "",
        "*load* is the machine's 1-minute load average during the run (mean / max, sampled every "
        "5 s; 2 cores), from other jobs: on oversubscribed cores KaMinPar's threads, which wait "
        "actively, and the writing pass slow down several times.",
        "",
        "| graph | path | method | balance | P | run | status | time s | cgroup peak GiB | "
        "anon peak GiB | VmHWM GiB | cut | nodes max/mean | in-edges max/mean | halo rows | "
        "passes s | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        g = r["graph"]
        graph = f"{g['num_nodes'] / 1e6:g}M / {g['num_edges'] / 1e6:.1f}M"
        status = r["status"]
        if status != "ok":
            status += f" after {r['wall_s']:.0f} s (limit {r['memory_limit_gib']:g} GiB)"
        phases = ", ".join(f"{k} {v:.0f}" for k, v in r.get("phase_s", {}).items()
                           if k != "total")
        if r["path"] == "memory" and "load_s" in r:
            phases = f"load {r['load_s']:.0f}; " + phases
        load = r.get("load_avg_1min")
        load = (f"{load['mean']:.1f} / {load['max']:.1f}" if isinstance(load, dict) else
                r.get("load_note", "-"))
        lines.append("| " + " | ".join([
            graph, r["path"], r["method"], r["balance"], str(r["num_parts"]),
            str(r.get("repeat", 0)), status,
            _fmt(r.get("time_s"), 1), _fmt(r.get("cgroup_peak_gib")),
            _fmt(r.get("anon_peak_gib")), _fmt(r.get("vmhwm_gib", r.get("vmhwm_sampled_gib"))),
            _fmt(r.get("edge_cut_fraction"), 3),
            _fmt(r.get("nodes", {}).get("max_over_mean"), 3),
            _fmt(r.get("in_edges", {}).get("max_over_mean"), 3),
            _fmt(r.get("halo_rows_sum")), phases or "-", load]) + " |")
    lines += ["", f"Machine: {result['env']['cpus']} CPUs, {result['env']['mem_gib']} GiB; "
              "a failed run's peaks are those reached before it ended."]
    notes = [r for r in rows if r.get("note")]
    if notes:
        lines += ["", "Notes:", ""] + [
            f"* {r['graph']['num_edges'] / 1e6:.0f}M {r['path']} {r['method']} "
            f"{r['balance']} run {r.get('repeat', 0)}: {r['note']}" for r in notes]
    lines.append("")
    out.with_suffix(".md").write_text("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.2))
    series: dict[str, list] = {}
    for r in rows:
        label = f"{r['path']} {r['method']} bal={r['balance']} P={r['num_parts']}"
        series.setdefault(label, []).append(r)
    for index, (label, runs) in enumerate(series.items()):
        ok = [r for r in runs if r["status"] == "ok" and r.get("repeat", 0) == 0]
        line = ax_t.plot([r["graph"]["num_edges"] / 1e6 for r in ok],
                         [r["time_s"] for r in ok], marker="o", label=label)[0]
        ax_m.plot([r["graph"]["num_edges"] / 1e6 for r in ok],
                  [r.get("cgroup_peak_gib") or 0 for r in ok], marker="o",
                  color=line.get_color(), label=label)
        for r in runs:  # further repeats: points of their own, with the machine's load
            if r["status"] == "ok" and r.get("repeat", 0) != 0:
                e = r["graph"]["num_edges"] / 1e6
                load = r.get("load_avg_1min")
                note = (f"load {load['mean']:.1f}" if isinstance(load, dict) else
                        "load " + r.get("load_note", "?").split(" (")[0])
                ax_t.plot(e, r["time_s"], marker="s", mfc="none", color=line.get_color())
                ax_t.annotate(f"repeat {r['repeat']}: {r['time_s']:.0f} s ({note})",
                              (e, r["time_s"]), fontsize=7, xytext=(-150, 4),
                              textcoords="offset points")
                ax_m.plot(e, r.get("cgroup_peak_gib") or 0, marker="s", mfc="none",
                          color=line.get_color())
        for r in runs:  # a run that did not finish: where it was stopped, not a finishing time
            if r["status"] != "ok":
                e, m = r["graph"]["num_edges"] / 1e6, r.get("cgroup_peak_gib") or 0
                text = f"{r['status']} after {r['wall_s']:.0f} s"
                for ax, y in ((ax_t, r["wall_s"]), (ax_m, m)):
                    ax.plot(e, y, marker="x", color=line.get_color(), markersize=12, mew=2)
                    ax.annotate(text, (e, y), fontsize=7, xytext=(-90, -14 - 12 * index),
                                textcoords="offset points")
    ax_t.axhline(600, ls="--", color="grey", lw=0.8, label="goal: 10 min")
    ax_m.axhline(12, ls="--", color="grey", lw=0.8, label="goal: 12 GB")
    ax_t.set(xlabel="edges (millions)", ylabel="time (s)", title="partitioning time")
    ax_m.set(xlabel="edges (millions)", ylabel="cgroup peak (GiB)",
             title="peak memory (x: run ended before finishing)")
    ax_t.set_ylim(bottom=0)
    ax_m.set_ylim(bottom=0)
    ax_t.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=110)
    plt.close(fig)


def _env() -> dict:
    import numpy as np

    mem_kib = int(Path("/proc/meminfo").read_text().split()[1])
    env = {"python": platform.python_version(), "numpy": np.__version__,
           "cpus": os.cpu_count(), "mem_gib": round(mem_kib / 2 ** 20, 1)}
    try:  # the partition code a run used (the working tree may differ from HEAD: listed)
        git = ["git", "-C", str(ROOT)]
        env["commit"] = subprocess.run(git + ["rev-parse", "--short", "HEAD"],
                                       capture_output=True, text=True).stdout.strip()
        env["modified"] = subprocess.run(
            git + ["status", "--porcelain", "--", "pyg_sar/partition"],
            capture_output=True, text=True).stdout.split("\n")[:20]
    except OSError:
        pass
    try:
        from importlib.metadata import version

        import kaminpar  # noqa: F401
        env["kaminpar"] = version("kaminpar")
    except ImportError:
        pass
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", help="NpySource folder (make_rmat_source.py)")
    parser.add_argument("--path", choices=("memory", "streaming"), default="memory")
    parser.add_argument("--method", choices=("metis", "kaminpar", "random", "contiguous"),
                        default="metis")
    parser.add_argument("--balance", choices=("nodes", "edges"), default="nodes")
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chunk-edges", type=int, default=0, help="0: the writer's default")
    parser.add_argument("--repeat", type=int, default=0, help="index stored with the run")
    parser.add_argument("--memory-limit-gb", type=float, default=10.0)
    parser.add_argument("--timeout-s", type=float, default=600.0)
    parser.add_argument("--work", default="/work/bench_data/partition_scale_work",
                        help="output and scratch folders of the runs (removed after each)")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.child_out:
        child(args)
        return
    out = Path(args.out)
    result = (json.loads(out.read_text()) if out.exists() else
              {"benchmark": "partition_scale_stream", "runs": []})
    result["env"] = _env()
    if not args.report_only:
        if not args.source:
            parser.error("--source is required (or --report-only)")
        Path(args.work).mkdir(parents=True, exist_ok=True)
        source_meta = json.loads((Path(args.source) / "source.json").read_text())
        gen = json.loads((Path(args.source) / "generation.json").read_text()) \
            if (Path(args.source) / "generation.json").exists() else {}
        record = run_one(args)
        record["repeat"] = args.repeat
        record["graph"] = {"num_nodes": source_meta["num_nodes"],
                           "num_edges": source_meta["num_edges"],
                           "num_edges_requested": source_meta.get("generator", {}).get(
                               "requested_edges", source_meta["num_edges"]),
                           "generator": source_meta.get("generator"), "generation": gen}
        record["when_utc"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
        record["code"] = {k: result["env"].get(k) for k in ("commit", "modified")}
        print(json.dumps({k: v for k, v in record.items() if k != "log_tail"}, indent=1))
        if record["status"] != "ok":
            print("\n".join(record["log_tail"]))
        result["runs"] = [r for r in result["runs"] if _key(r) != _key(record)] + [record]
        _save(out, result)
    write_report(out, result)
    print(f"wrote {out} and {out.with_suffix('.md').name}")


if __name__ == "__main__":
    main()
