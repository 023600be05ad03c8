"""A requeued Slurm job survives a failure (issue 38): on a real Slurm cluster on two
network-namespace hosts (tests/netns/slurm_cluster.py), `sbatch --requeue` runs `srun
--mpi=none python -m pyg_sar.train --checkpoint DIR --resume auto` over gloo, one rank per
host. In the job's first run rank 1 is killed (SIGKILL) at the checkpoint of epoch 8; the step
fails and the batch script requeues its own job (`scontrol requeue`, the usual pattern); Slurm
runs it again with `SLURM_RESTART_COUNT=1`, the same command resumes after epoch 4 and ends
with parameters, RNG states and losses bit-identical to an uninterrupted job (float64, dropout
on), rank 0 saying `(restart 1 by the launcher); 4 epoch(s) done before are computed again`.
Needs root and Debian's slurm-wlm + munge, else skipped with the reason."""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyg_sar.testing.netns import NetnsHosts
from tests.netns.launch_env import SUPERVISION
from tests.netns.slurm_cluster import SlurmCluster, unavailable_reason
from tests.reliability.checkpoints import (
    assert_same_losses,
    assert_same_states,
    final_rank_states,
)

ROOT = Path(__file__).resolve().parents[2]
KILLED_ONCE = str(ROOT / "tests" / "reliability" / "train_killed_once.py")
EPOCHS, EVERY, KILL_AT = 12, 4, 8
HANG_S = 400.0  # one job, requeue included (hang detector)
pytestmark = pytest.mark.skipif(unavailable_reason() is not None,
                                reason=str(unavailable_reason()))

_SCRIPT = """#!/bin/sh
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
echo "run ${{SLURM_RESTART_COUNT:-0}} of job $SLURM_JOB_ID at $(date +%s)"
srun --mpi=none {python} {argv}
code=$?
if [ $code -ne 0 ] && [ "${{SLURM_RESTART_COUNT:-0}}" -lt 1 ]; then
    echo "requeue at $(date +%s)"
    scontrol requeue "$SLURM_JOB_ID"
    sleep 60  # the requeue ends this run
fi
echo "step ended with $code"
exit $code
"""


def _train(ck: Path, parts: Path) -> list[str]:
    return ["--parts", str(parts), "--dtype", "float64", "--epochs", str(EPOCHS),
            "--hidden", "16", "--dropout", "0.5", "--progress", "log", "--log-every", "100",
            "--checkpoint", str(ck), "--checkpoint-every", str(EVERY), "--resume", "auto"]


@pytest.fixture(scope="module")
def cluster():
    with NetnsHosts(2) as hosts, SlurmCluster(hosts) as slurm:
        yield hosts, slurm


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    import pyg_sar
    from pyg_sar.datasets import cora
    out = tmp_path_factory.mktemp("requeue") / "cora-2"
    pyg_sar.partition_graph(cora(), 2, out)
    return out


def _job(cluster, work: Path, argv: list[str], runs: int) -> str:
    """Submit the batch script running ``argv`` with ``--requeue``; wait until its output
    says ``runs`` runs' steps ended (polling the file: a requeued job's ``sbatch --wait``
    may return with the first run). Returns the job's output."""
    hosts, slurm = cluster
    work.mkdir()
    script = work / "job.sbatch"
    script.write_text(_SCRIPT.format(python=sys.executable,
                                     argv=" ".join(map(str, argv))))
    out = work / "job.out"
    sub = subprocess.run(hosts.command(0, ["sbatch", "--requeue", "--open-mode=append", "-o",
                                           str(out), str(script)]),
                         env=slurm.task_env(**SUPERVISION), cwd=work, capture_output=True,
                         text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert sub.returncode == 0, sub.stdout + sub.stderr
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline:
        text = out.read_text(errors="replace") if out.exists() else ""
        if len(re.findall(r"^step ended with \d+$", text, re.M)) >= runs:
            return text
        time.sleep(0.5)
    text = out.read_text(errors="replace") if out.exists() else "(no job output)"
    pytest.fail(f"the job did not end within {HANG_S:.0f} s:\n{text[-4000:]}\n"
                f"Slurm's logs:\n{slurm.logs()}")


def test_requeued_slurm_job_resumes_and_ends_as_uninterrupted(cluster, parts, tmp_path):
    full = _job(cluster, tmp_path / "full", ["-m", "pyg_sar.train",
                                             *_train(tmp_path / "full-ck", parts)], runs=1)
    assert "step ended with 0" in full and "starting at epoch 1" in full, full[-4000:]
    start = time.monotonic()
    text = _job(cluster, tmp_path / "killed", [KILLED_ONCE, "rank", str(KILL_AT),
                                               *_train(tmp_path / "ck", parts)], runs=1)
    took = time.monotonic() - start
    runs = re.findall(r"^run (\d+) of job \d+ at (\d+)$", text, re.M)
    assert [r[0] for r in runs] == ["0", "1"], text[-4000:]
    requeued = int(re.search(r"^requeue at (\d+)$", text, re.M)[1])
    assert re.findall(r"^step ended with (\d+)$", text, re.M)[-1] == "0", text[-4000:]
    found = re.search(r"resumed from \S+ after epoch (\d+) \(restart 1 by the launcher\); "
                      r"(\d+) epoch\(s\) done before are computed again", text)
    assert found, text[-4000:]
    assert (int(found[1]), int(found[2])) == (KILL_AT - EVERY, EVERY)
    want = final_rank_states(tmp_path / "full-ck", EPOCHS)
    got = final_rank_states(tmp_path / "ck", EPOCHS)
    assert_same_states(want, got)
    assert_same_losses(want, got, EPOCHS)
    print(f"requeued job: submitted to finished in {took:.1f} s; its second run started "
          f"{int(runs[1][1]) - requeued} s after the requeue")
