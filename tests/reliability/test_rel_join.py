"""A peer that never joins makes pyg_sar.init fail within its timeout, naming who is missing
(under mpiexec, torchrun and separately started processes)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pyg_sar.testing import find_mpiexec, has_mpi
from pyg_sar.testing.launcher import _free_port

ROOT = Path(__file__).resolve().parents[2]
JOB = str(Path(__file__).with_name("join_job.py"))
TIMEOUT = 4.0
SLACK = 10.0  # imports and rendezvous start-up, on a loaded 2-core machine


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")
           and not k.startswith(("PMI_", "OMPI_", "HYDRA_", "TORCHELASTIC_"))}
    return dict(env, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", **extra)


def _errors(output: str) -> dict[int, tuple[float, str]]:
    return {int(r): (float(t), msg) for r, t, msg in
            re.findall(r"JOIN-ERROR rank (\d+) after ([\d.]+) s: (.*)", output)}


def _run(cmd: list[str], env: dict) -> str:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    return proc.stdout + proc.stderr


@pytest.mark.skipif(not has_mpi(), reason="needs mpiexec and mpi4py")
def test_mpiexec_names_the_rank_that_never_joins():
    out = _run([find_mpiexec(), "-n", "3", sys.executable, JOB, "1", str(TIMEOUT), "mpi"], _env())
    errors = _errors(out)
    assert sorted(errors) == [0, 2], out[-3000:]
    for took, msg in errors.values():
        assert "rank(s) [1] of 3 never joined within 4.0 s" in msg
        assert took < TIMEOUT + SLACK


@pytest.mark.skipif(not has_mpi(), reason="needs mpiexec and mpi4py")
def test_mpiexec_rank_that_never_starts_mpi():
    """MPI_Init itself waits for every rank (holding the GIL): a guard process ends the rank
    at the deadline with a message naming the rank that never arrived (all ranks on one host)."""
    out = _run([find_mpiexec(), "-n", "3", sys.executable, JOB, "1", str(TIMEOUT)], _env())
    found = re.findall(r"pyg_sar.init: rank (\d): MPI_Init did not complete within 4.0 s "
                       r"\(it waits for every rank of this 3-rank launch\): (.*)", out)
    assert found, out[-3000:]
    for rank, who in found:
        assert rank in ("0", "2")
        assert who.startswith("rank(s) [1] of 3 never started MPI"), who


def test_torchrun_names_the_rank_that_never_joins():
    out = _run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
                "--nproc-per-node=2", JOB, "1", str(TIMEOUT)], _env())
    errors = _errors(out)
    assert list(errors) == [0], out[-3000:]
    assert "rank(s) [1] of 2 never joined within 4.0 s" in errors[0][1]
    assert errors[0][0] < TIMEOUT + SLACK


@pytest.mark.parametrize("late,needle", [
    (1, "rank 0: rank(s) [1] of 2 never joined within 4.0 s"),
    (0, "rank 1 could not reach the rendezvous store at 127.0.0.1:{port} within 4.0 s: rank 0, "
        "which hosts it, never joined"),
])
def test_separate_processes_name_the_missing_rank(late, needle):
    port = str(_free_port())
    present = 1 - late
    out = _run([sys.executable, JOB, str(late), str(TIMEOUT)],
               _env(RANK=str(present), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                    MASTER_PORT=port, LOCAL_RANK=str(present)))
    errors = _errors(out)
    assert list(errors) == [present], out[-3000:]
    assert needle.format(port=port) in errors[present][1]
    assert errors[present][0] < TIMEOUT + SLACK
