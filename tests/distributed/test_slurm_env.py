"""Slurm's environment as pyg_sar.init reads it, without Slurm: the JSON files in slurm_env/ are
the environments captured from a real two-node cluster (Slurm 22.05, tests/netns/slurm_cluster.py)
in `srun -n 2 --mpi=pmi2`, `srun -n 2 --mpi=none` and an `sbatch -n 2` batch script."""
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from pyg_sar.distributed import context
from pyg_sar.distributed.address import expand_hostlist, expand_tasks_per_node

ENVS = Path(__file__).parent / "slurm_env"
_LAUNCH_VARS = ("SLURM", "PMI", "PMIX", "OMPI_", "MV2_", "MPI_LOCAL", "RANK", "WORLD_SIZE",
                "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_", "TORCHELASTIC")


def captured(name: str) -> dict:
    return json.loads((ENVS / f"{name}.json").read_text())


@pytest.fixture
def slurm_env(monkeypatch):
    """Replace every launcher variable of this process by a captured environment."""
    for key in list(os.environ):
        if key.startswith(_LAUNCH_VARS):
            monkeypatch.delenv(key)

    def use(name: str, **extra: str) -> None:
        for key, value in {**captured(name), **extra}.items():
            monkeypatch.setenv(key, value)
    return use


@pytest.mark.parametrize("hostlist, names", [
    ("host[0-1]", ["host0", "host1"]),
    ("node[01-03,7],gpu5", ["node01", "node02", "node03", "node7", "gpu5"]),
    ("n[8-10]", ["n8", "n9", "n10"]),
    ("a[1-2]-b[3,4]", ["a1-b3", "a1-b4", "a2-b3", "a2-b4"]),
    ("single", ["single"]),
])
def test_expand_hostlist(hostlist, names):
    assert expand_hostlist(hostlist) == names


@pytest.mark.parametrize("bad", ["node[1-", "node[3-1]", "node[a-b]", "node1]"])
def test_expand_hostlist_refuses(bad):
    with pytest.raises(ValueError, match="Slurm host list"):
        expand_hostlist(bad)


@pytest.mark.parametrize("spec, counts", [("1(x2)", [1, 1]), ("2(x3),1", [2, 2, 2, 1]),
                                          ("4", [4]), ("3,1(x2),2", [3, 1, 1, 2])])
def test_expand_tasks_per_node(spec, counts):
    assert expand_tasks_per_node(spec) == counts


@pytest.mark.parametrize("bad", ["2(x3", "x", "2(xa)", ""])
def test_expand_tasks_per_node_refuses(bad):
    with pytest.raises(ValueError, match="tasks-per-node"):
        expand_tasks_per_node(bad)


@pytest.mark.parametrize("name, rank, pmi", [("srun_pmi2_rank0", 0, True),
                                             ("srun_pmi2_rank1", 1, True),
                                             ("srun_mpi_none_rank0", 0, False),
                                             ("srun_mpi_none_rank1", 1, False)])
def test_step_from_captured_env(slurm_env, name, rank, pmi):
    slurm_env(name)
    assert context.detect_launcher() == "slurm"
    step = context.slurm_step()
    assert (step.rank, step.world_size, step.local_rank, step.local_world_size) == (rank, 2, 0, 1)
    assert step.nodes == ("host0", "host1") and step.pmi is pmi
    assert step.cpus_per_task is None and step.job_id == int(captured(name)["SLURM_JOB_ID"])


def test_step_with_several_tasks_per_node(slurm_env):
    slurm_env("srun_pmi2_rank1", SLURM_STEP_NUM_TASKS="7", SLURM_PROCID="5", SLURM_NODEID="2",
              SLURM_LOCALID="1", SLURM_STEP_TASKS_PER_NODE="2(x3),1",
              SLURM_STEP_NODELIST="node[01-03],gpu5", SLURM_CPUS_PER_TASK="4", PMI_SIZE="7")
    step = context.slurm_step()
    assert (step.rank, step.world_size, step.local_rank, step.local_world_size) == (5, 7, 1, 2)
    assert step.nodes == ("node01", "node02", "node03", "gpu5") and step.cpus_per_task == 4


def test_launchers_inside_a_step_win(slurm_env, monkeypatch):
    slurm_env("srun_mpi_none_rank0", RANK="3", WORLD_SIZE="8", LOCAL_RANK="3",
              TORCHELASTIC_RUN_ID="x")
    assert context.detect_launcher() == "torchrun"  # srun -N 2 torchrun --nproc-per-node 4
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RUN_ID"):
        monkeypatch.delenv(key)
    monkeypatch.setenv("PMI_RANK", "5")
    monkeypatch.setenv("PMI_SIZE", "8")
    assert context.detect_launcher() == "mpiexec"  # Hydra started inside a 2-task step


def test_batch_script_is_not_a_step_and_warns(slurm_env):
    slurm_env("sbatch_script")
    assert context.detect_launcher() == "none" and context.slurm_step() is None
    context.shutdown()
    try:
        with pytest.warns(UserWarning, match=r"outside a job step.*Launch with srun"):
            ctx = context.init()
        assert ctx.world_size == 1 and ctx.launcher == "none"
    finally:
        context.shutdown()


def _fake_mpi(size: int):
    world = SimpleNamespace(Get_size=lambda: size, Get_rank=lambda: 0)
    return SimpleNamespace(COMM_WORLD=world)


@pytest.mark.parametrize("name, backend", [("srun_pmi2_rank0", None),
                                           ("srun_mpi_none_rank0", "mpi")])
def test_wrong_mpi_plugin_is_caught(slurm_env, monkeypatch, name, backend):
    """srun without the plugin MPI speaks: each task is an MPI world of 1."""
    slurm_env(name)
    monkeypatch.setattr(context, "_import_mpi", lambda *a, **k: _fake_mpi(1))
    context.shutdown()
    with pytest.raises(RuntimeError, match=r"srun started 2 tasks but MPI sees a world of 1: "
                       r"use srun --mpi=pmi2 \(MPICH\) or --mpi=pmix \(Open MPI\)"):
        context.init(backend=backend)
    assert context.get_context() is None


def test_mpi_world_other_than_the_step_is_refused(slurm_env, monkeypatch):
    slurm_env("srun_pmi2_rank0")
    monkeypatch.setattr(context, "_import_mpi", lambda *a, **k: _fake_mpi(3))
    with pytest.raises(RuntimeError, match="srun started 2 tasks but MPI sees a world of 3"):
        context.init()


def test_rendezvous_without_mpi(slurm_env, monkeypatch):
    slurm_env("srun_mpi_none_rank1", SLURM_JOB_ID="123456", SLURM_STEP_NODELIST="localhost,n2")
    step = context.slurm_step()
    assert context.slurm_rendezvous(step) == ("127.0.0.1", str(29500 + 3456))
    monkeypatch.setenv("MASTER_ADDR", "10.1.2.3")
    monkeypatch.setenv("MASTER_PORT", "4000")
    assert context.slurm_rendezvous(step) == ("10.1.2.3", "4000")


def test_unresolvable_first_node_asks_scontrol(slurm_env, monkeypatch):
    """The namespace hosts' names resolve nowhere, as on clusters without DNS for nodes."""
    slurm_env("srun_mpi_none_rank1", SLURM_STEP_NODELIST="pygsar-nowhere[0-1].invalid")
    import subprocess
    seen = []

    def fake_run(argv, **kwargs):
        seen.append(argv)
        return SimpleNamespace(stdout="NodeName=x Arch=x86_64 NodeAddr=198.18.0.1 State=IDLE")
    monkeypatch.setattr(subprocess, "run", fake_run)
    assert context.slurm_rendezvous(context.slurm_step())[0] == "198.18.0.1"
    assert seen == [["scontrol", "show", "node", "-o", "pygsar-nowhere0.invalid"]]
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: SimpleNamespace(stdout=""))
    with pytest.raises(RuntimeError, match="does not resolve.*set MASTER_ADDR"):
        context.slurm_rendezvous(context.slurm_step())


def test_bad_slurm_variable_is_named(slurm_env):
    slurm_env("srun_pmi2_rank0", SLURM_STEP_NODELIST="host[1-")
    with pytest.raises(RuntimeError, match=r"host\[1-"):
        context.slurm_step()
    slurm_env("srun_pmi2_rank0", SLURM_PROCID="2")
    with pytest.raises(RuntimeError, match="SLURM_PROCID=2"):
        context.slurm_step()


def test_threads_from_cpus_per_task(monkeypatch):
    import torch
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    try:
        assert context._set_threads(4, cpus_per_task=3) == 3  # not cores // 4
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        torch.set_num_threads(2)
        assert context._set_threads(1, cpus_per_task=3) == 2  # the user's setting stays
    finally:
        torch.set_num_threads(before)
