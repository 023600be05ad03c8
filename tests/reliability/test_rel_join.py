"""A peer that never joins makes pyg_sar.init fail within its timeout, naming who is missing
(under mpiexec, torchrun and separately started processes).

The rank that never joins stays alive until the test has read every other rank's report and
creates a release file: its exit can never be mistaken for the failure under test."""
from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyg_sar.testing import find_mpiexec, has_mpi
from pyg_sar.testing.launcher import _free_port

ROOT = Path(__file__).resolve().parents[2]
JOB = str(Path(__file__).with_name("join_job.py"))
TIMEOUT = 4.0
SLACK = 30.0  # hang detector around the timeout: start-up on a loaded machine; default 120 s
HANG_S = 180.0


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")
           and not k.startswith(("PMI_", "OMPI_", "HYDRA_", "TORCHELASTIC_"))}
    return dict(env, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", **extra)


def _errors(output: str) -> dict[int, tuple[float, str]]:
    return {int(r): (float(t), msg) for r, t, msg in
            re.findall(r"JOIN-ERROR rank (\d+) after ([\d.]+) s: (.*)", output)}


def _run(cmd: list[str], env: dict, reports: str = "", count: int = 0,
         release: Path | None = None) -> str:
    """Run the job; once ``count`` lines of its output match ``reports`` (or it ended),
    create ``release`` (the late rank exits then). Returns the whole output."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out, deadline = b"", time.monotonic() + HANG_S
    try:
        while len(re.findall(reports.encode(), out)) < count:
            ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
            assert ready, f"no report within {HANG_S} s:\n{out.decode()[-3000:]}"
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            out += chunk
        if release is not None:
            release.touch()
        out += proc.communicate(timeout=HANG_S)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return out.decode()


@pytest.mark.skipif(not has_mpi(), reason="needs mpiexec and mpi4py")
def test_mpiexec_names_the_rank_that_never_joins(tmp_path):
    release = tmp_path / "release"
    out = _run([find_mpiexec(), "-n", "3", sys.executable, JOB, "1", str(TIMEOUT), str(release),
                "mpi"], _env(), r"JOIN-ERROR rank \d", 2, release)
    errors = _errors(out)
    assert sorted(errors) == [0, 2], out[-3000:]
    for took, msg in errors.values():
        assert "rank(s) [1] of 3 never joined within 4.0 s" in msg
        assert took < TIMEOUT + SLACK


@pytest.mark.skipif(not has_mpi(), reason="needs mpiexec and mpi4py")
def test_mpiexec_rank_that_never_starts_mpi(tmp_path):
    """MPI_Init itself waits for every rank (holding the GIL): under supervision a guard process
    ends the rank at the deadline with a message naming the rank that never arrived (all ranks
    on one host)."""
    release = tmp_path / "release"
    out = _run([find_mpiexec(), "-n", "3", sys.executable, JOB, "1", str(TIMEOUT), str(release)],
               _env(PYG_SAR_SUPERVISE="1"), r"MPI_Init did not complete.*\n", 2, release)
    found = re.findall(r"pyg_sar.init: rank (\d): MPI_Init did not complete within 4.0 s "
                       r"\(it waits for every rank of this 3-rank launch\): (.*)", out)
    assert found, out[-3000:]
    for rank, who in found:
        assert rank in ("0", "2")
        assert who.startswith("rank(s) [1] of 3 never started MPI"), who


def test_torchrun_names_the_rank_that_never_joins(tmp_path):
    release = tmp_path / "release"
    out = _run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
                "--nproc-per-node=2", JOB, "1", str(TIMEOUT), str(release)], _env(),
               r"JOIN-ERROR rank \d", 1, release)
    errors = _errors(out)
    assert list(errors) == [0], out[-3000:]
    assert "rank(s) [1] of 2 never joined within 4.0 s" in errors[0][1]
    assert errors[0][0] < TIMEOUT + SLACK


@pytest.mark.parametrize("late,needle", [
    (1, "rank 0: rank(s) [1] of 2 never joined within 4.0 s"),
    (0, "rank 1 could not reach the rendezvous store at 127.0.0.1:{port} within 4.0 s: rank 0, "
        "which hosts it, never joined"),
])
def test_separate_processes_name_the_missing_rank(tmp_path, late, needle):
    port = str(_free_port())
    present = 1 - late  # the late rank is never started
    out = _run([sys.executable, JOB, str(late), str(TIMEOUT), str(tmp_path / "release")],
               _env(RANK=str(present), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                    MASTER_PORT=port, LOCAL_RANK=str(present)))
    errors = _errors(out)
    assert list(errors) == [present], out[-3000:]
    assert needle.format(port=port) in errors[present][1]
    assert errors[present][0] < TIMEOUT + SLACK
