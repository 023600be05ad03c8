r"""Run a function on ``P`` ranks in separate processes and collect what each returns.

Every multi-rank test in the repository goes through :func:`run_on_ranks`. Starting ranks is
slow (each imports torch), so a target should loop over many cases and return a dict of
per-case results; a module-scoped pytest fixture launches once and tests assert per case.

Each rank runs ``python -m pyg_sar.testing.worker``, which calls :func:`pyg_sar.init`, then
``fn(ctx, **kwargs)``, and writes the JSON result (or the traceback) to a per-rank file; its
stdout and stderr go to a per-rank log whose tail is shown when something goes wrong.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

LAUNCHERS = ("mpiexec", "torchrun", "spawn")

# Variables of an enclosing launch that must not leak into the ranks' environment.
_LAUNCH_PREFIXES = ("PMI_", "PMIX_", "OMPI_", "MV2_", "HYDRA_", "MPI_LOCAL", "TORCHELASTIC_")
_LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                "MASTER_ADDR", "MASTER_PORT", "ROLE_RANK", "ROLE_WORLD_SIZE")
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_GRACE_S = 5.0  # how long the other ranks may still finish after one rank failed (spawn)


class RankFailure(RuntimeError):
    """A rank raised, died, or exited uncleanly; the message names it and shows its error."""


class RankTimeout(RankFailure):
    """The ranks did not finish within the launch's timeout (they were killed)."""


def find_mpiexec() -> Optional[str]:
    """The ``mpiexec`` next to the running Python (a venv's MPICH), else the one on PATH."""
    local = Path(sys.executable).parent / "mpiexec"
    if local.exists():
        return str(local)
    return shutil.which("mpiexec")


@functools.cache
def _is_open_mpi(mpiexec: str) -> bool:
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in out.stdout + out.stderr or "OpenRTE" in out.stdout + out.stderr


def has_mpi() -> bool:
    """Whether ``launcher="mpiexec"`` can run: an mpiexec is found and mpi4py is installed."""
    import importlib.util
    return find_mpiexec() is not None and importlib.util.find_spec("mpi4py") is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _base_env(env: Optional[dict]) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items()
           if k not in _LAUNCH_VARS and not k.startswith(_LAUNCH_PREFIXES)}
    out["OMP_NUM_THREADS"] = "1"  # ranks share the host's cores; overridable through env
    out["PYTHONPATH"] = os.pathsep.join(
        p for p in (_PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)
    out["PYTHONUNBUFFERED"] = "1"
    for k, v in (env or {}).items():
        if v is None:
            out.pop(k, None)  # None removes a variable (e.g. OMP_NUM_THREADS)
        else:
            out[k] = str(v)
    return out


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no output)"
    kept = text.rstrip().splitlines()[-lines:]
    return "\n".join(kept) if kept else "(no output)"


def _read_result(path: Path) -> Optional[dict]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (from /proc; empty where there is none)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        ppid = int(text[text.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill(procs: list[subprocess.Popen]) -> None:
    """Kill each launch and everything it started. mpiexec's proxies put the ranks in
    sessions of their own, so the process group is not enough: the tree is walked first."""
    killed: list[int] = []
    for p in procs:
        if p.poll() is not None:
            continue
        tree = _descendants(p.pid)
        killed += tree
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            p.kill()
        for pid in tree:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
    # A killed rank takes a moment to tear down its memory: return only once it is gone.
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in killed) and time.monotonic() < deadline:
        time.sleep(0.05)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def error_of(fn) -> dict:
    """Run ``fn()`` on a rank and report what it raised as JSON-able data (``type``,
    ``message``, the tail of the traceback), or ``{"type": None, "message": ""}``: rank
    targets return it so that a test can assert on every rank's error."""
    import traceback
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the error is the result
        return {"type": type(exc).__name__, "message": str(exc),
                "trace": traceback.format_exc()[-600:]}
    return {"type": None, "message": ""}


def run_on_ranks(target: str, world_size: int, *, kwargs: Optional[dict] = None,
                 launcher: str = "mpiexec", backend: Optional[str] = None,
                 timeout: float = 300.0, env: Optional[dict] = None,
                 comm_timeout: Optional[float] = None,
                 device: Optional[str] = None) -> list[Any]:
    r"""Run ``fn(ctx, **kwargs)`` on ``world_size`` ranks; return the per-rank results.

    Args:
        target: ``"package.module:function"`` or ``"path/to/file.py:function"``.
        world_size: number of ranks.
        kwargs: JSON-serialisable keyword arguments passed to the function on every rank.
        launcher: ``"mpiexec"``, ``"torchrun"``, or ``"spawn"`` (plain processes given only
            ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT`` and ``LOCAL_RANK``).
        backend: passed to :func:`pyg_sar.init` (``None``: the launcher's default).
        timeout: seconds for the whole launch; past it every rank is killed.
        env: extra environment variables for the ranks (``OMP_NUM_THREADS=1`` unless set;
            a value ``None`` removes the variable).
        comm_timeout: passed to :func:`pyg_sar.init` as ``timeout``.
        device: passed to :func:`pyg_sar.init` (e.g. ``"cuda"``: each rank computes on
            ``cuda:<local_rank % device_count>``).

    Returns:
        ``[result of rank 0, result of rank 1, ...]`` (each JSON-decoded).

    Raises:
        RankFailure: a rank raised (the message names the first failing rank and shows its
            traceback; the others are summarised), died, or exited with a nonzero code.
        RankTimeout: the launch did not finish within ``timeout``.
    """
    if launcher not in LAUNCHERS:
        raise ValueError(f"run_on_ranks: launcher must be one of {LAUNCHERS} (got {launcher!r})")
    if not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"run_on_ranks: world_size must be an integer >= 1 (got {world_size!r})")
    if ":" not in target:
        raise ValueError(f"run_on_ranks: target must be 'module:function' or "
                         f"'file.py:function' (got {target!r})")
    work = Path(tempfile.mkdtemp(prefix="pyg_sar_ranks_"))
    try:
        (work / "kwargs.json").write_text(json.dumps(kwargs or {}))
        worker = [sys.executable, "-m", "pyg_sar.testing.worker", "--target", target,
                  "--out-dir", str(work)]
        if backend is not None:
            worker += ["--backend", backend]
        if comm_timeout is not None:
            worker += ["--timeout", str(comm_timeout)]
        if device is not None:
            worker += ["--device", str(device)]
        base = _base_env(env)
        log = open(work / "launcher.log", "ab")
        procs: list[subprocess.Popen] = []
        try:
            if launcher == "spawn":
                port = str(_free_port())
                for r in range(world_size):
                    rank_env = dict(base, RANK=str(r), WORLD_SIZE=str(world_size),
                                    MASTER_ADDR="127.0.0.1", MASTER_PORT=port, LOCAL_RANK=str(r))
                    procs.append(subprocess.Popen(worker, env=rank_env, stdout=log, stderr=log,
                                                  stdin=subprocess.DEVNULL,
                                                  start_new_session=True))
            else:
                if launcher == "mpiexec":
                    mpiexec = find_mpiexec()
                    if mpiexec is None:
                        raise RuntimeError("run_on_ranks: launcher 'mpiexec' but no mpiexec next "
                                           f"to {sys.executable} or on PATH")
                    # Open MPI refuses to start as root unless told (containers, CI machines);
                    # MPICH has no such rule.
                    extra = []
                    if _is_open_mpi(mpiexec):
                        extra = ["--oversubscribe"]
                        if hasattr(os, "geteuid") and os.geteuid() == 0:
                            extra.append("--allow-run-as-root")
                        # Its rsh launcher insists on ssh / rsh existing even for ranks on this
                        # host (containers often have neither); an empty agent starts them
                        # locally.
                        if not (shutil.which("ssh") or shutil.which("rsh")):
                            base = dict(base, OMPI_MCA_plm_rsh_agent=base.get(
                                "OMPI_MCA_plm_rsh_agent", ""))
                    cmd = [mpiexec, *extra, "-n", str(world_size), *worker]
                else:
                    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nnodes=1", f"--nproc-per-node={world_size}", *worker[1:]]
                procs.append(subprocess.Popen(cmd, env=base, stdout=log, stderr=log,
                                              stdin=subprocess.DEVNULL, start_new_session=True))
            timed_out = _wait(procs, time.monotonic() + timeout, spawn=launcher == "spawn")
        finally:
            _kill(procs)
            log.close()
        return _collect(work, target, world_size, launcher, backend, timeout, timed_out,
                        [p.returncode for p in procs])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _wait(procs: list[subprocess.Popen], deadline: float, spawn: bool) -> bool:
    """Wait for every process; returns whether the deadline passed first. With plain
    processes, the others get a short grace period once one has failed."""
    failed_at: Optional[float] = None
    delay = 0.01
    while True:
        codes = [p.poll() for p in procs]
        if all(c is not None for c in codes):
            return False
        now = time.monotonic()
        if spawn and failed_at is None and any(c not in (None, 0) for c in codes):
            failed_at = now
        if failed_at is not None and now - failed_at > _GRACE_S:
            return False
        if now > deadline:
            return True
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def _collect(work: Path, target: str, world_size: int, launcher: str, backend: Optional[str],
             timeout: float, timed_out: bool, codes: list[Optional[int]]) -> list[Any]:
    results = [_read_result(work / f"result{r}.json") for r in range(world_size)]
    where = f"{target} on {world_size} ranks (launcher {launcher}, backend {backend or 'default'})"
    launch_tail = _tail(work / "launcher.log", 10)
    if timed_out:
        parts = [f"pyg_sar.testing: {where} timed out after {timeout:.1f} s; ranks killed."]
        for r in range(world_size):
            state = "returned" if results[r] and results[r].get("ok") else \
                "raised" if results[r] else "still running"
            parts.append(f"--- rank {r} ({state}), last output:\n"
                         f"{_tail(work / f'rank{r}.log')}")
        parts.append(f"--- launcher output:\n{launch_tail}")
        raise RankTimeout("\n".join(parts))
    failed = [r for r in range(world_size) if results[r] is not None and not results[r]["ok"]]
    missing = [r for r in range(world_size) if results[r] is None]
    if failed or missing:
        first = min(failed, key=lambda r: (results[r]["time"], r)) if failed else missing[0]
        if results[first] is not None:
            detail = results[first]["error"]
        else:
            detail = f"exited without a result; last output:\n{_tail(work / f'rank{first}.log')}"
        others = []
        for r in range(world_size):
            if r == first:
                continue
            if results[r] is None:
                others.append(f"rank {r}: no result (killed or died); last output: "
                              f"{_tail(work / f'rank{r}.log', 3)}")
            elif not results[r]["ok"]:
                others.append(f"rank {r}: {results[r]['error'].strip().splitlines()[-1]}")
            else:
                others.append(f"rank {r}: returned")
        raise RankFailure(f"pyg_sar.testing: rank {first} failed in {where}:\n{detail}\n"
                          f"--- other ranks:\n" + "\n".join(others)
                          + f"\n--- launcher output:\n{launch_tail}")
    bad = [c for c in codes if c != 0]
    if bad:
        raise RankFailure(
            f"pyg_sar.testing: every rank of {where} returned, but the launch exited with "
            f"code(s) {codes} (unclean shutdown).\n"
            + "\n".join(f"--- rank {r}, last output:\n{_tail(work / f'rank{r}.log')}"
                        for r in range(world_size))
            + f"\n--- launcher output:\n{launch_tail}")
    return [res["result"] for res in results]
