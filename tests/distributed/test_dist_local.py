"""Single process: LocalCommunicator, the ring schedule, init() with no launcher."""
import pytest
import torch

import pyg_sar
from pyg_sar.distributed import LocalCommunicator, ring_peers, start_exchange


def test_ring_peers_cover_every_pair_once():
    for P in (1, 2, 3, 4, 7):
        for r in range(P):
            peers = [ring_peers(r, P, k) for k in range(1, P)]
            assert [s for s, _ in peers] == [(r - k) % P for k in range(1, P)]
            assert sorted(s for s, _ in peers) == sorted(set(range(P)) - {r})
            assert sorted(q for _, q in peers) == sorted(set(range(P)) - {r})
            # what r sends at step k is what its destination receives at step k
            for k, (dst, _) in enumerate(peers, start=1):
                assert ring_peers(dst, P, k)[1] == r
    with pytest.raises(ValueError, match="rank must be in"):
        ring_peers(3, 3, 1)


def test_local_communicator():
    comm = LocalCommunicator(timeout=1.0)
    x = torch.arange(6.0).view(3, 2)
    assert comm.all_reduce(x.clone()).equal(x)
    assert comm.broadcast(x.clone()).equal(x)
    out = torch.empty(3, 2)
    assert comm.all_to_all_single(out, x, [3], [3]).equal(x)
    assert comm.allgather_object({"a": [1, 2]}) == [{"a": [1, 2]}]
    comm.barrier()
    recv = torch.empty(2)
    work = comm.irecv(recv, 0, tag=4)
    comm.isend(torch.tensor([5.0, 6.0]), 0, tag=4)
    assert work.wait().tolist() == [5.0, 6.0]
    assert start_exchange(comm, torch.ones(1), 0, torch.zeros(1), 0, tag=2).wait().item() == 1
    with pytest.raises(RuntimeError, match="rank 0 timed out .* in irecv from rank 0 \\(tag 9\\)"):
        comm.irecv(torch.empty(1), 0, tag=9).wait()
    with pytest.raises(ValueError, match="summing to 3 rows"):
        comm.all_to_all_single(out, x, [3], [2])
    with pytest.raises(ValueError, match="peer must be a rank in \\[0, 1\\) \\(got 1\\)"):
        comm.isend(x, 1)


@pytest.fixture
def fresh_context():
    if pyg_sar.get_context() is not None:
        pytest.skip("another test left a communication context initialised")
    yield
    pyg_sar.shutdown()


def test_init_single_process(fresh_context, monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ValueError, match="backend must be one of .* \\(got 'tcp'\\)"):
        pyg_sar.init(backend="tcp")
    with pytest.raises(ValueError, match="timeout must be > 0"):
        pyg_sar.init(timeout=0)
    ctx = pyg_sar.init(timeout=5.0)
    assert (ctx.rank, ctx.world_size, ctx.backend, ctx.launcher) == (0, 1, "local", "none")
    assert isinstance(ctx.comm, LocalCommunicator) and ctx.device == torch.device("cpu")
    assert pyg_sar.init() is ctx and pyg_sar.init(timeout=5.0) is ctx
    with pytest.raises(RuntimeError, match="already initialised with different arguments"):
        pyg_sar.init(timeout=6.0)
    # Gradient sync and broadcast are no-ops on one rank.
    model = torch.nn.Linear(2, 1)
    model(torch.ones(1, 2)).sum().backward()
    grad = model.weight.grad.clone()
    pyg_sar.all_reduce_gradients(model)
    pyg_sar.broadcast_parameters(model)
    assert model.weight.grad.equal(grad)
    pyg_sar.shutdown()
    assert pyg_sar.get_context() is None
