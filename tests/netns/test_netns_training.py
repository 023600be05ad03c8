"""`python -m pyg_sar.train` on two network-namespace hosts, under torchrun (one agent per
host, --nnodes 2, rendezvous on host 0's address) and under MPICH's mpiexec (Hydra starting
its proxies inside the namespaces): it runs (it used to hang in pyg_sar.init: the watchdog
advertised an unresolvable hostname), equals the single-host run exactly, and its data crosses
the veth links (switch-port byte counters >= the engine's own byte counts)."""
import json
import os
import sys

import pytest

from pyg_sar.testing.launcher import find_mpiexec, has_mpi
from pyg_sar.testing.netns import MPI_ENV, NetnsHosts, run_commands

TIMEOUT_S = 240.0  # hang detector per launch (ranks start slowly on a loaded 2-core host)
TRAIN = ["-m", "pyg_sar.train", "--epochs", "3", "--dtype", "float64", "--hidden", "16",
         "--progress", "log", "--eval-every", "1"]


def _env(**extra):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(p for p in (
                   os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                   os.environ.get("PYTHONPATH")) if p))
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK",
              "GLOO_SOCKET_IFNAME"):
        env.pop(k, None)  # the fix must not need them
    env.update(extra)
    return env


def _check(codes, logs):
    if any(codes):
        tails = "\n".join(f"--- {p}:\n{p.read_text(errors='replace')[-3000:]}" for p in logs)
        pytest.fail(f"exit codes {codes}:\n{tails}")


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    import pyg_sar
    from pyg_sar.datasets import cora
    out = tmp_path_factory.mktemp("netns") / "cora-2"
    pyg_sar.partition_graph(cora(), 2, out)
    return out


def _run_netns(launcher, parts, tmp):
    metrics = tmp / f"{launcher}.json"
    argv = [*TRAIN, "--parts", str(parts), "--metrics", str(metrics)]
    with NetnsHosts(2) as hosts:
        before = hosts.link_bytes()
        if launcher == "torchrun":
            cmds = [hosts.torchrun_command(h, argv) for h in range(2)]
            env = _env()
        else:
            cmds = [hosts.mpiexec_command([sys.executable, *argv])]
            env = _env(**MPI_ENV)
        logs = [tmp / f"{launcher}{i}.log" for i in range(len(cmds))]
        _check(run_commands(cmds, logs, env=env, timeout=TIMEOUT_S), logs)
        after = hosts.link_bytes()
    crossed = [{k: a[k] - b[k] for k in a} for a, b in zip(after, before)]
    return json.loads(metrics.read_text()), crossed


@pytest.fixture(scope="module")
def single_host(parts, tmp_path_factory):
    """The same job on this host (mpiexec -n 2, no namespaces): the reference."""
    if not has_mpi():
        pytest.skip("needs mpiexec and mpi4py")
    tmp = tmp_path_factory.mktemp("single")
    metrics = tmp / "single.json"
    logs = [tmp / "single.log"]
    cmd = [find_mpiexec(), "-n", "2", sys.executable, *TRAIN, "--parts", str(parts),
           "--metrics", str(metrics)]
    _check(run_commands([cmd], logs, env=_env(), timeout=TIMEOUT_S), logs)
    return json.loads(metrics.read_text())


def _sent(per_rank_traffic):
    return sum(d["sent"] for layer in per_rank_traffic.values() for d in layer.values())


@pytest.mark.parametrize("launcher", ["torchrun", "mpiexec"])
def test_training_across_hosts_equals_single_host(launcher, parts, single_host,
                                                  tmp_path):
    if launcher == "mpiexec" and not has_mpi():
        pytest.skip("needs mpiexec and mpi4py")
    got, crossed = _run_netns(launcher, parts, tmp_path)
    assert got["world_size"] == 2
    assert got["backend"] == ("gloo" if launcher == "torchrun" else "mpi")
    # Exactly the single-host run (float64; a sum over 2 ranks is order-free).
    for key in ("loss", "train_acc", "val_acc"):
        assert [h[key] for h in got["history"]] == [h[key] for h in single_host["history"]]
    assert got["final_test_acc"] == single_host["final_test_acc"]
    assert got["traffic"] == single_host["traffic"]
    # The data crossed the links: each host's port carried at least what its rank's engine
    # sent (plus headers, the gradient all-reduce and the control traffic).
    for rank in range(2):
        engine = _sent(got["traffic"]["per_rank"][rank])
        assert engine > 0
        assert crossed[rank]["from_host"] >= engine, (rank, crossed, engine)
    total = got["traffic"]["bytes_sent"] + got["traffic"]["eval_bytes_sent"]
    assert sum(c["from_host"] for c in crossed) >= total
