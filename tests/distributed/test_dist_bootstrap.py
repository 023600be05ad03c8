"""pyg_sar.init under each launcher: detection, idempotency, threads, torch.distributed
rendezvous over MPI (with DDP on the default group), torchrun."""
import os

import pytest
import torch

from pyg_sar.testing import has_mpi, run_on_ranks

HERE = os.path.abspath(__file__)


def bootstrap_cases(ctx) -> dict:
    import pyg_sar
    out = {"launcher": ctx.launcher, "backend": ctx.backend, "rank": ctx.rank,
           "local_rank": ctx.local_rank, "local_world_size": ctx.local_world_size,
           "num_threads": ctx.num_threads, "torch_threads": torch.get_num_threads(),
           "cores": len(os.sched_getaffinity(0)), "torch_distributed": ctx.torch_distributed}
    out["same"] = pyg_sar.init() is ctx and pyg_sar.init(backend=ctx.backend) is ctx \
        and pyg_sar.get_context() is ctx
    try:
        pyg_sar.init(backend="gloo" if ctx.backend == "mpi" else "mpi")
        out["conflict"] = None
    except RuntimeError as e:
        out["conflict"] = str(e)
    t = torch.tensor([float(ctx.rank + 1)])
    out["sum"] = ctx.comm.all_reduce(t).item()
    if ctx.backend == "mpi":
        out["ddp"] = _mpi_with_torch_distributed()
    return out


def _mpi_with_torch_distributed() -> dict:
    """Re-initialise with a gloo default group (rendezvous over MPI) and train one DDP step:
    DDP's averaged gradient equals SAR's summed gradient divided by P."""
    import torch.distributed as dist

    import pyg_sar
    pyg_sar.shutdown()
    assert pyg_sar.get_context() is None
    ctx = pyg_sar.init(backend="mpi", init_torch_distributed=True)
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    x = torch.full((2, 3), float(ctx.rank + 1))
    ddp(x).sum().backward()
    ddp_grad = model.weight.grad.clone()
    model.weight.grad = None
    model(x).sum().backward()
    pyg_sar.all_reduce_gradients([model.weight])
    return {"initialised": dist.is_initialized(), "backend": str(dist.get_backend()),
            "torch_distributed": ctx.torch_distributed,
            "ddp_grad": ddp_grad.tolist(), "sar_grad_over_p": (model.weight.grad /
                                                                 ctx.world_size).tolist()}


needs_mpi = pytest.mark.skipif(not has_mpi(), reason="needs mpiexec and mpi4py")


@pytest.fixture(scope="module")
def mpi_threads_unset():
    """mpiexec + mpi, OMP_NUM_THREADS unset: init chooses the thread count itself."""
    return run_on_ranks(f"{HERE}:bootstrap_cases", 2, launcher="mpiexec", backend="mpi",
                        env={"OMP_NUM_THREADS": None}, timeout=240)


@needs_mpi
def test_mpiexec_detection_and_idempotent_init(mpi_threads_unset):
    for r, res in enumerate(mpi_threads_unset):
        assert (res["launcher"], res["backend"], res["rank"]) == ("mpiexec", "mpi", r)
        assert (res["local_rank"], res["local_world_size"]) == (r, 2)
        assert res["same"] is True
        assert "already initialised with different arguments" in res["conflict"]
        assert "backend='gloo'" in res["conflict"]
        assert res["sum"] == 3.0


@needs_mpi
def test_threads_from_affinity_and_local_ranks(mpi_threads_unset):
    for res in mpi_threads_unset:
        assert res["num_threads"] == max(1, res["cores"] // 2) == res["torch_threads"]


@needs_mpi
def test_mpi_backend_with_torch_distributed_for_ddp(mpi_threads_unset):
    for res in mpi_threads_unset:
        ddp = res["ddp"]
        assert ddp["initialised"] and ddp["torch_distributed"] and ddp["backend"] == "gloo"
        assert torch.allclose(torch.tensor(ddp["ddp_grad"]), torch.tensor(ddp["sar_grad_over_p"]))
        assert ddp["ddp_grad"] == mpi_threads_unset[0]["ddp"]["ddp_grad"]


def test_torchrun_gloo():
    results = run_on_ranks(f"{HERE}:bootstrap_cases", 2, launcher="torchrun", timeout=240)
    for r, res in enumerate(results):
        assert (res["launcher"], res["backend"], res["rank"]) == ("torchrun", "gloo", r)
        assert res["torch_distributed"] is True
        assert res["num_threads"] == 1  # OMP_NUM_THREADS=1 set by the launcher is respected
        assert res["same"] is True and "backend='mpi'" in res["conflict"]
        assert res["sum"] == 3.0
