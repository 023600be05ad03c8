"""With failure supervision asked for (``init(supervise=True)``), a rank that dies (SIGKILL) or
raises mid-epoch stops every other rank within 60 s with a non-zero exit status and a message
naming the failed rank and its operation: under mpiexec, torchrun, and plain processes started
with only the environment (no launcher to kill the rest).

Without supervision (a plain ``init()``) under mpiexec: a killed rank ends the job through the
launcher (MPICH's hydra kills the other ranks at once); a rank that raises waits in
MPI_Finalize for the others, which end in their communication timeout with an error naming
the rank and the operation.

The logs are read once every process of the job has ended, the witnesses (which outlive their
ranks and may print on their behalf) included: a mark in the job's environment finds them.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pyg_sar.testing import find_mpiexec, has_mpi
from pyg_sar.testing import launcher as _launcher
from pyg_sar.testing.launcher import _descendants, _free_port

ROOT = Path(__file__).resolve().parents[2]
JOB = str(Path(__file__).with_name("failing_job.py"))
LIMIT_S = 60.0
HANG_S = 120.0


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    from pyg_sar.datasets import load_dataset
    from pyg_sar.partition import partition_graph
    root = tmp_path_factory.mktemp("parts")
    return {p: str(partition_graph(load_dataset("cora"), p, root / f"p{p}", method="random"))
            for p in (2, 3)}


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")
           and not k.startswith(("PMI_", "OMPI_", "HYDRA_", "TORCHELASTIC_"))}
    return dict(env, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", **extra)


def _marked(mark: str) -> list[int]:
    """Live processes whose environment carries ``mark``."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if mark.encode() in environ.read_bytes() and _launcher._running(
                    int(environ.parent.name)):
                found.append(int(environ.parent.name))
        except (OSError, ValueError):
            continue
    return found


def _wait_until_gone(mark: str) -> None:
    """Until every process of the job has ended (polling /proc; HANG_S is a hang detector)."""
    deadline = time.monotonic() + HANG_S
    while left := _marked(mark):
        assert time.monotonic() < deadline, f"processes {left} of the job still run"
        time.sleep(0.05)


def _launch(launcher: str, world_size: int, args: list[str]) -> tuple[list[int], float]:
    """Run the job; returns (exit codes: one per launch process, seconds from the injected
    failure to the last process's end)."""
    job = [sys.executable, JOB, *args]
    mark = f"PYG_SAR_TEST_JOB={uuid.uuid4().hex}"
    name, value = mark.split("=")
    if launcher == "spawn":
        port = str(_free_port())
        procs = [subprocess.Popen(job, env=_env(RANK=str(r), WORLD_SIZE=str(world_size),
                                                 MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                                                 LOCAL_RANK=str(r), **{name: value}),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True) for r in range(world_size)]
    else:
        cmd = ([find_mpiexec(), "-n", str(world_size)] if launcher == "mpiexec" else
               [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
                f"--nproc-per-node={world_size}"])
        out = open(Path(args[args.index("--log-dir") + 1]) / "launcher.log", "wb")
        procs = [subprocess.Popen(cmd + (job if launcher == "mpiexec" else job[1:]),
                                  env=_env(**{name: value}), stdout=out, stderr=out,
                                  start_new_session=True)]
        out.close()
    try:
        for p in procs:
            p.wait(timeout=180 + LIMIT_S)
    finally:
        for p in procs:  # never leave a rank behind, whatever happened
            for pid in [p.pid, *_descendants(p.pid)]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    ended = time.time()
    _wait_until_gone(mark)  # the witnesses too: what they print is in the logs now
    failed_at = Path(args[args.index("--log-dir") + 1]) / "failed_at"
    assert failed_at.exists(), "the failure was never injected"
    return [p.returncode for p in procs], ended - float(failed_at.read_text())


def _check(tmp_path: Path, parts: str, launcher: str, world_size: int, fail_rank: int,
           how: str) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    codes, took = _launch(launcher, world_size, ["--parts", parts, "--log-dir", str(logs),
                                                 "--fail-rank", str(fail_rank), "--how", how])
    assert all(c != 0 for c in codes) if launcher == "spawn" else codes[0] != 0, codes
    assert took < LIMIT_S, f"the other ranks took {took:.1f} s to stop"
    for r in range(world_size):
        text = (logs / f"rank{r}.log").read_text()
        assert "finished" not in text
        if r == fail_rank:
            continue
        found = re.search(rf"pyg_sar: rank {r} stops: rank {fail_rank} failed in (.+?): (.+)",
                          text)
        assert found, f"rank {r} did not name the failure:\n{text[-2000:]}"
        operation, error = found.groups()
        assert re.search(r"all_reduce|all_to_all|allgather|irecv|isend|broadcast|barrier|"
                         r"computation", operation), operation
        if how == "raise":
            assert f"ValueError: injected failure on rank {fail_rank} at epoch 3" in error
        else:
            assert "exited or was killed" in error


needs_mpi = pytest.mark.skipif(not has_mpi(), reason="needs mpiexec and mpi4py")


@needs_mpi
@pytest.mark.parametrize("how", ["raise", "kill"])
def test_mpiexec(tmp_path, parts, how):
    _check(tmp_path, parts[2], "mpiexec", 2, 1, how)


def test_torchrun_rank_killed(tmp_path, parts):
    _check(tmp_path, parts[2], "torchrun", 2, 1, "kill")


@pytest.mark.parametrize("fail_rank,how", [(1, "raise"), (0, "kill")])
def test_separate_processes(tmp_path, parts, fail_rank, how):
    """No launcher kills the others: the watchdog alone must stop them (3 ranks: the relay
    itself is killed in one case, a rank it relays for raises in the other)."""
    _check(tmp_path, parts[3], "spawn", 3, fail_rank, how)


@needs_mpi
def test_mpiexec_unsupervised_killed_rank_ends_the_job(tmp_path, parts):
    logs = tmp_path / "logs"
    logs.mkdir()
    codes, took = _launch("mpiexec", 2, ["--parts", parts[2], "--log-dir", str(logs),
                                         "--fail-rank", "1", "--how", "kill",
                                         "--supervise", "0"])
    assert codes[0] != 0, codes
    assert took < LIMIT_S, f"the launcher took {took:.1f} s to end the job"
    assert "BAD TERMINATION" in (logs / "launcher.log").read_text()
    text = (logs / "rank0.log").read_text()
    assert "finished" not in text and "pyg_sar: rank 0 stops" not in text, text[-2000:]


@needs_mpi
def test_mpiexec_unsupervised_raise_aborts_the_job(tmp_path, parts):
    """Without supervision a rank whose script raises aborts the MPI job from pyg_sar's exit
    handler, so the other ranks stop at once instead of waiting out their 120 s timeout."""
    logs = tmp_path / "logs"
    logs.mkdir()
    codes, took = _launch("mpiexec", 2, ["--parts", parts[2], "--log-dir", str(logs),
                                         "--fail-rank", "1", "--how", "raise",
                                         "--supervise", "0"])
    assert codes[0] != 0, codes
    assert took < LIMIT_S, f"the job took {took:.1f} s to end (default timeout 120 s)"
    failing = (logs / "rank1.log").read_text()
    assert "ValueError: injected failure on rank 1 at epoch 3" in failing, failing[-2000:]
    assert "pyg_sar: rank 1 raised an uncaught exception; aborting the MPI job" in failing
    text = (logs / "rank0.log").read_text()
    assert "finished" not in text and "timed out" not in text, text[-2000:]


@needs_mpi
def test_mpiexec_unsupervised_wait_ends_in_the_timeout_naming_the_operation(tmp_path, parts):
    """A rank that stops answering without exiting (here: it raises inside a script that
    catches the error and sleeps) is found by the others' timeout, which names the
    operation they were in."""
    logs = tmp_path / "logs"
    logs.mkdir()
    timeout = 8.0
    codes, took = _launch("mpiexec", 2, ["--parts", parts[2], "--log-dir", str(logs),
                                         "--fail-rank", "1", "--how", "hang",
                                         "--supervise", "0", "--timeout", str(timeout)])
    assert codes[0] != 0, codes
    assert timeout <= took < timeout + LIMIT_S, took
    text = (logs / "rank0.log").read_text()
    assert "finished" not in text
    found = re.search(r"CommTimeout: pyg_sar: rank 0 timed out after 8.0 s in (.+)", text)
    assert found, text[-2000:]
    assert re.search(r"all_reduce|all_to_all|allgather|irecv|isend|broadcast|barrier",
                     found.group(1)), found.group(1)
