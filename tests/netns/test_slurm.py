"""A real Slurm cluster on two network-namespace hosts (slurmctld in host 0, one slurmd per
host, one munged; tests/netns/slurm_cluster.py): the batch script of docs/across_hosts.md
("Slurm") trains Cora on 2 ranks, one per host, under `sbatch --wait`; `srun --mpi=none` gives
every task an MPI world of 1, which pyg_sar.init refuses loudly; without MPI the same step
trains over gloo, meeting on the first node's NodeAddr (the hostnames resolve nowhere).
Needs root and Debian's slurm-wlm + munge (.ci/setup_slurm), else skipped with the reason."""
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyg_sar.testing.netns import MPI_ENV, NetnsHosts
from tests.netns.slurm_cluster import SlurmCluster, unavailable_reason

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 300.0  # per Slurm command (a PMI2 fault ends an attempt sooner, see _run)
pytestmark = pytest.mark.skipif(unavailable_reason() is not None,
                                reason=str(unavailable_reason()))


def docs_batch_script() -> str:
    """The batch script of docs/across_hosts.md's "Slurm" section, as the docs show it."""
    text = (ROOT / "docs" / "across_hosts.md").read_text()
    section = text.split("\n## Slurm\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    script = next(b for b in blocks if "#SBATCH" in b)
    assert "srun --mpi=pmi2 " in script and "python -m pyg_sar.train" in script
    return script


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with NetnsHosts(2) as hosts, SlurmCluster(hosts) as slurm:
        yield hosts, slurm


# Debian's Slurm 22.05 PMI2 server sometimes reads an MPICH client request in pieces and
# rejects it ("mpi/pmi2: invalid client request"), so MPI_Init fails before any pyg_sar code
# runs: about one run in ten on an idle machine here, every attempt on a loaded CI machine.
# MPI_Init then either fails at once or hangs (both tasks wait for each other). Only that
# fault is retried, at most twice; a hang showing it is ended FAULT_GRACE_S after it shows
# (instead of waiting out TIMEOUT_S); three faults skip the test naming Slurm's fault (the
# same job over gloo, test_sbatch_without_mpi_trains_over_gloo, does not depend on it). Any
# other failure fails the test.
PMI2_FLAKE = "mpi/pmi2: invalid client request"
FAULT_GRACE_S = 20.0


def _run(cluster, argv, cwd, watch: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``argv`` in host 0, output to files in ``cwd``. While it runs, its output (and
    ``watch``, a job's output file) is checked for Slurm's PMI2 fault: FAULT_GRACE_S after the
    fault shows, a command still running is ended (with every job of the cluster, so that no
    hung job holds the nodes) and returned with returncode None."""
    hosts, slurm = cluster
    env = slurm.task_env(**MPI_ENV)
    out_path, err_path = Path(cwd) / "cmd.out", Path(cwd) / "cmd.err"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        proc = subprocess.Popen(hosts.command(0, argv), env=env, cwd=cwd, stdout=out,
                                stderr=err, text=True, stdin=subprocess.DEVNULL)
    deadline, fault_seen = time.monotonic() + TIMEOUT_S, None

    def output() -> str:
        texts = [out_path.read_text(errors="replace"), err_path.read_text(errors="replace")]
        if watch is not None and watch.exists():
            texts.append(watch.read_text(errors="replace"))
        return "".join(texts)

    while proc.poll() is None:
        now = time.monotonic()
        if fault_seen is None and PMI2_FLAKE in output():
            fault_seen = now
        if now > deadline or (fault_seen is not None and now - fault_seen > FAULT_GRACE_S):
            proc.kill()
            proc.wait()
            subprocess.run(hosts.command(0, ["scancel", "--user", "root"]), env=env,
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
            if fault_seen is None:
                pytest.fail(f"{argv} did not end within {TIMEOUT_S:.0f} s; Slurm's logs:\n"
                            + slurm.logs())
            break
        time.sleep(0.2)
    code = None if fault_seen is not None and proc.returncode < 0 else proc.returncode
    return subprocess.CompletedProcess(argv, code, out_path.read_text(errors="replace"),
                                       err_path.read_text(errors="replace"))


def _skip_if_slurm_pmi2_fault(output: str) -> None:
    if PMI2_FLAKE in output:
        pytest.skip("Slurm's PMI2 server rejected MPICH's requests in 3 attempts "
                    f"({PMI2_FLAKE!r}, a fault of Debian's Slurm 22.05 before any pyg_sar code "
                    "runs); needs a Slurm whose PMI2 server reads requests whole")


def _sbatch_docs_script(cluster, tmp_path, attempts: int, edit=lambda s: s):
    for attempt in range(attempts):
        work = tmp_path / f"attempt{attempt}"
        work.mkdir()
        script = work / "train.sbatch"
        script.write_text(edit(docs_batch_script().replace("--epochs 100", "--epochs 20")))
        out = _run(cluster, ["sbatch", "--wait", "-o", str(work / "job.out"), str(script)],
                   work, watch=work / "job.out")
        log = (work / "job.out").read_text(errors="replace") \
            if (work / "job.out").exists() else "(no job output)"
        if out.returncode == 0 or PMI2_FLAKE not in log:
            break
    if out.returncode != 0:
        _skip_if_slurm_pmi2_fault(log)
    assert out.returncode == 0, \
        f"sbatch (attempt {attempt + 1}): {out.stdout}{out.stderr}\njob output:\n{log}"
    return log


def test_sbatch_trains_cora_across_two_hosts(cluster, tmp_path):
    log = _sbatch_docs_script(cluster, tmp_path, attempts=3)
    assert "2 rank(s)" in log and "backend=mpi" in log, log
    acc = re.search(r"final test accuracy: (\d\.\d+)", log)
    assert acc and float(acc.group(1)) > 0.5, log


def test_sbatch_without_mpi_trains_over_gloo(cluster, tmp_path):
    """The docs' batch script with srun --mpi=none: the same two-host job over gloo."""
    log = _sbatch_docs_script(cluster, tmp_path, attempts=1,
                              edit=lambda s: s.replace("--mpi=pmi2", "--mpi=none"))
    assert "2 rank(s)" in log and "backend=gloo" in log, log
    acc = re.search(r"final test accuracy: (\d\.\d+)", log)
    assert acc and float(acc.group(1)) > 0.5, log


# Light tasks (pyg_sar.init only): the full training job is the sbatch test's.
_INIT = ("import socket, pyg_sar; ctx = pyg_sar.init({args}); "
         "print('world', ctx.rank, ctx.world_size, ctx.backend, ctx.launcher, "
         "ctx.comm.allgather_object(socket.gethostname()), flush=True)")


def test_srun_without_mpi_plugin_is_refused(cluster, tmp_path):
    out = _run(cluster, ["srun", "-n", "2", "--mpi=none", "python", "-c",
                         _INIT.format(args="backend='mpi'")], tmp_path)
    assert out.returncode != 0, out.stdout + out.stderr
    msg = ("srun started 2 tasks but MPI sees a world of 1: use srun --mpi=pmi2 (MPICH) or "
           "--mpi=pmix (Open MPI)")
    assert out.stderr.count(msg) == 2, out.stderr  # both tasks, not two silent jobs
    assert "world" not in out.stdout, out.stdout


def test_srun_without_mpi_meets_over_gloo(cluster, tmp_path):
    """No PMI variables: gloo, rendezvous on host0's NodeAddr (its name resolves nowhere)."""
    out = _run(cluster, ["srun", "-n", "2", "--mpi=none", "python", "-c",
                         _INIT.format(args="")], tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = sorted(line for line in out.stdout.splitlines() if line.startswith("world"))
    assert lines == [f"world {r} 2 gloo slurm ['host0', 'host1']" for r in (0, 1)], out.stdout


def test_srun_pmi2_is_one_mpi_world(cluster, tmp_path):
    # --kill-on-bad-exit: when the PMI2 flake fails one task's MPI_Init, srun ends the other
    # (which would wait in MPI_Init for minutes) and the attempt is retried, as sbatch's is.
    for _ in range(3):
        out = _run(cluster, ["srun", "-n", "2", "--mpi=pmi2", "--kill-on-bad-exit=1", "python",
                             "-c", _INIT.format(args="")], tmp_path)
        if out.returncode == 0 or PMI2_FLAKE not in out.stdout + out.stderr:
            break
    if out.returncode != 0:
        _skip_if_slurm_pmi2_fault(out.stdout + out.stderr)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = sorted(line for line in out.stdout.splitlines() if line.startswith("world"))
    assert lines == [f"world {r} 2 mpi slurm ['host0', 'host1']" for r in (0, 1)], out.stdout


def test_a_hang_showing_the_pmi2_fault_ends_soon(cluster, tmp_path, monkeypatch):
    """The harness itself: a command that shows Slurm's PMI2 fault and then hangs (as MPI_Init
    does when the fault hits both tasks) is ended FAULT_GRACE_S after the fault shows, not at
    TIMEOUT_S, and comes back as a fault (returncode None, the fault in its output)."""
    monkeypatch.setattr(sys.modules[__name__], "FAULT_GRACE_S", 2.0)
    start = time.monotonic()
    out = _run(cluster, ["sh", "-c", f"echo 'slurmstepd-host0: error: {PMI2_FLAKE}' >&2; "
                                     "sleep 600"], tmp_path)
    assert time.monotonic() - start < 30
    assert out.returncode is None and PMI2_FLAKE in out.stderr, out
