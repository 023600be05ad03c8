"""Communicator primitives, the streaming schedule and gradient sync on 2-4 ranks.

One launch per configuration runs every case (:func:`primitive_cases`) and returns the values
each rank received; the tests below rebuild the expected values here and compare.
"""
import os
import time

import pytest
import torch

from pyg_sar.testing import has_mpi, run_on_ranks

DTYPES = ["float32", "float64", "int64", "int32", "uint8", "bool", "bfloat16", "float16"]
CONFIGS = [  # (launcher, backend, world size)
    ("mpiexec", "mpi", 2), ("mpiexec", "mpi", 3), ("mpiexec", "mpi", 4),
    ("spawn", "gloo", 2), ("mpiexec", "gloo", 2),
]


def make(src: int, dst: int, rows: int, dtype: str, cols: int = 3) -> torch.Tensor:
    """The rows rank ``src`` sends to rank ``dst`` (distinct for every pair and row)."""
    base = torch.arange(rows * cols, dtype=torch.float64).view(rows, cols)
    values = base + 100 * src + 10 * dst + 0.5
    if dtype == "bool":
        return (base.long() + src + dst) % 3 == 0
    if dtype in ("int64", "int32", "uint8"):
        values = values.floor() % 251  # in range of every integer dtype
    return values.to(getattr(torch, dtype))


def as_list(t: torch.Tensor) -> list:
    return t.tolist() if t.dtype == torch.bool else t.double().tolist()


def stream_rows(src: int, dst: int) -> int:
    return (3 * src + dst) % 4  # includes zero-row messages


def split_rows(src: int, dst: int) -> int:
    return (src + 2 * dst) % 3  # uneven, some zero


# ----------------------------------------------------------------------------- rank side
def _p2p(comm, dtype: str) -> dict:
    """Every rank sends a non-contiguous tensor to every other and receives into a
    non-contiguous buffer."""
    works, bufs = [], {}
    for peer in range(comm.world_size):
        if peer != comm.rank:
            holder = torch.zeros(3, 4, dtype=getattr(torch, dtype))
            bufs[peer] = holder[:, 1:]  # non-contiguous receive buffer
            works.append(comm.irecv(bufs[peer], peer, tag=5))
    for peer in range(comm.world_size):
        if peer != comm.rank:
            send = make(comm.rank, peer, 3, dtype).t().contiguous().t()  # non-contiguous
            assert not send.is_contiguous()
            works.append(comm.isend(send, peer, tag=5))
    for w in works:
        w.wait()
    return {str(p): as_list(b) for p, b in bufs.items()}


def _tags(comm) -> list:
    """Two messages to the same peer, received in the opposite order of their tags."""
    peer_to, peer_from = (comm.rank + 1) % comm.world_size, (comm.rank - 1) % comm.world_size
    first, second = torch.zeros(2), torch.zeros(2)
    w2 = comm.irecv(second, peer_from, tag=2)
    w1 = comm.irecv(first, peer_from, tag=1)
    s1 = comm.isend(torch.tensor([1.0, comm.rank]), peer_to, tag=1)
    s2 = comm.isend(torch.tensor([2.0, comm.rank]), peer_to, tag=2)
    for w in (w2, w1, s1, s2):
        w.wait()
    return [first.tolist(), second.tolist()]


def _zero_size(comm) -> list:
    peer_to, peer_from = (comm.rank + 1) % comm.world_size, (comm.rank - 1) % comm.world_size
    out = torch.empty(0, 4)
    w = comm.irecv(out, peer_from, tag=9)
    comm.isend(torch.empty(0, 4), peer_to, tag=9).wait()
    return list(w.wait().shape)


def _all_reduce(comm) -> dict:
    r = comm.rank
    out = {}
    for dtype in ("float64", "float32", "bfloat16", "float16", "int64"):
        t = make(r, 0, 2, dtype)
        out[f"sum_{dtype}"] = as_list(comm.all_reduce(t))
    out["max_int64"] = as_list(comm.all_reduce(torch.tensor([r, -r, 7]), op="max"))
    out["min_int64"] = as_list(comm.all_reduce(torch.tensor([r, -r, 7]), op="min"))
    flags = torch.tensor([r == 0, False, True])
    out["sum_bool"] = as_list(comm.all_reduce(flags))  # logical or
    out["min_bool"] = as_list(comm.all_reduce(torch.tensor([r == 0, True]), op="min"))
    holder = torch.ones(2, 3, dtype=torch.float64) * (r + 1)
    comm.all_reduce(holder[:, 1])  # non-contiguous, in place
    out["noncontig"] = as_list(holder)
    return out


def _broadcast(comm) -> dict:
    src = comm.world_size - 1
    out = {}
    for dtype in DTYPES:
        t = make(comm.rank, 0, 2, dtype)
        out[dtype] = as_list(comm.broadcast(t, src=src))
    holder = torch.zeros(3, 2)
    view = holder[:, 0]
    if comm.rank == src:
        view.copy_(torch.tensor([1.0, 2.0, 3.0]))
    comm.broadcast(view, src=src)
    out["noncontig"] = as_list(holder)
    return out


def _all_to_all(comm) -> dict:
    P, r = comm.world_size, comm.rank
    out = {}
    for dtype in ("float32", "bfloat16", "int64", "bool"):
        send = torch.cat([make(r, q, split_rows(r, q), dtype) for q in range(P)])
        recv_rows = [split_rows(q, r) for q in range(P)]
        recv = torch.empty(sum(recv_rows), 3, dtype=getattr(torch, dtype))
        comm.all_to_all_single(recv, send, recv_rows, [split_rows(r, q) for q in range(P)])
        out[dtype] = as_list(recv)
    # Equal splits when no sizes are given; 1-D tensors.
    send = torch.arange(2 * P, dtype=torch.float64) + 100 * r
    recv = torch.empty(2 * P, dtype=torch.float64)
    out["equal_1d"] = as_list(comm.all_to_all_single(recv, send))
    return out


def _errors(comm) -> dict:
    """Bad input is refused with a message naming the value (and nothing is sent)."""
    P = comm.world_size
    messages = {}
    cases = {
        "bad_splits": lambda: comm.all_to_all_single(torch.empty(P), torch.empty(P),
                                                     [1] * P, [2] * P),
        "bad_peer": lambda: comm.isend(torch.zeros(1), P),
        "bad_op": lambda: comm.all_reduce(torch.zeros(1), op="mean"),
        "bad_object": lambda: comm.allgather_object({1, 2}),
    }
    for name, fn in cases.items():
        try:
            fn()
            messages[name] = None
        except ValueError as e:
            messages[name] = str(e)
    return messages


def _stream(comm, depth: int) -> list:
    """The ring schedule with ``depth`` exchanges in flight ahead of the one consumed."""
    from pyg_sar.distributed import ring_peers, start_exchange
    r, P = comm.rank, comm.world_size
    pending, seen = [], []
    for step in range(1, P):
        while len(pending) <= depth and step + len(pending) < P:
            send_to, recv_from = ring_peers(r, P, step + len(pending))
            pending.append(start_exchange(
                comm, make(r, send_to, stream_rows(r, send_to), "float64"), send_to,
                torch.empty(stream_rows(recv_from, r), 3, dtype=torch.float64), recv_from,
                tag=20 + depth))
        exchange = pending.pop(0)
        seen.append([step, exchange.recv_from, as_list(exchange.wait())])
    return seen


def _isolation(ctx) -> list:
    """SAR's communicator is not the default one: collectives on both, started in opposite
    orders on different ranks, still match up correctly."""
    r, comm = ctx.rank, ctx.comm
    world = torch.full((1,), 1.0 + r)
    sar = torch.full((1,), 100.0 * (r + 1))
    if ctx.backend == "mpi":
        from mpi4py import MPI

        def start_world():
            req = MPI.COMM_WORLD.Iallreduce(MPI.IN_PLACE, [world.numpy(), MPI.FLOAT])
            return req.Wait
    else:
        import torch.distributed as dist

        def start_world():
            return dist.all_reduce(world, async_op=True).wait
    if r % 2 == 0:  # default group first, then SAR's
        wait_world = start_world()
        comm.all_reduce(sar)
        wait_world()
    else:  # SAR's first
        comm.all_reduce(sar)
        start_world()()
    return [world.item(), sar.item()]


def _sync(ctx) -> dict:
    """all_reduce_gradients: the sum of each rank's gradients; broadcast_parameters."""
    import pyg_sar
    torch.manual_seed(0)
    model = GradModel()
    loss = model(ctx.rank)
    loss.backward()
    pyg_sar.all_reduce_gradients(model, bucket_size_mb=1e-4)  # several buckets
    grads = {n: (None if p.grad is None else as_list(p.grad))
             for n, p in model.named_parameters()}

    torch.manual_seed(ctx.rank)  # different parameters on every rank
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    net(torch.randn(5, 3))  # moves the BatchNorm running statistics
    before = {k: as_list(v) for k, v in net.state_dict().items()}
    pyg_sar.broadcast_parameters(net, src=0)
    state = {k: as_list(v) for k, v in net.state_dict().items()}
    return {"grads": grads, "before": before, "state": state}


class GradModel(torch.nn.Module):
    """Parameters of two dtypes; ``only0`` gets a grad on rank 0 only, ``unused`` nowhere."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2).double()
        self.w32 = torch.nn.Parameter(torch.randn(4))
        self.only0 = torch.nn.Parameter(torch.randn(2, dtype=torch.float64))
        self.unused = torch.nn.Parameter(torch.randn(2))

    def forward(self, rank: int) -> torch.Tensor:
        x = make(rank, 0, 4, "float64")
        loss = (self.lin(x) ** 2).sum() + (self.w32 * (rank + 1)).pow(3).sum().double()
        if rank == 0:
            loss = loss + (self.only0 * x[0, :2]).sum()
        return loss


def _timeout(ctx, sync_dir: str) -> str:
    """Rank 1 waits for a message rank 0 never sends. Rank 0 stays alive until rank 1 has its
    answer (a file says so): a peer that exits is an error of its own."""
    done = os.path.join(sync_dir, "rank1-timed-out")
    if ctx.rank != 1:
        deadline = time.monotonic() + 120  # hang detector only
        while ctx.rank == 0 and not os.path.exists(done) and time.monotonic() < deadline:
            time.sleep(0.02)
        return ""
    from pyg_sar.distributed.transport import CommTimeout
    try:
        ctx.comm.irecv(torch.zeros(3), 0, tag=7).wait(timeout=1.0)
        message = "no error"
    except CommTimeout as e:  # typed: a timeout is recognised by its class, not its text
        message = str(e) if (e.seconds, e.operation) == (1.0, "irecv from rank 0 (tag 7)") \
            else f"wrong attributes: {e.seconds}, {e.operation!r}: {e}"
    except RuntimeError as e:
        message = f"not a CommTimeout ({type(e).__name__}): {e}"
    with open(done + ".tmp", "w") as f:
        f.write(message)
    os.replace(done + ".tmp", done)
    return message


def _short_message(ctx) -> str:
    """MPI: a message shorter than the receive buffer is an error, not a partial fill."""
    if ctx.backend != "mpi" or ctx.rank > 1:
        return ""
    if ctx.rank == 0:
        ctx.comm.isend(torch.zeros(3), 1, tag=11).wait()
        return ""
    try:
        ctx.comm.irecv(torch.zeros(4), 0, tag=11).wait()
    except RuntimeError as e:
        return str(e)
    return "no error"


def primitive_cases(ctx, sync_dir: str) -> dict:
    comm = ctx.comm
    out = {"world_size": comm.world_size, "rank": comm.rank, "backend": ctx.backend}
    out["p2p"] = {dtype: _p2p(comm, dtype) for dtype in DTYPES}
    out["tags"] = _tags(comm)
    out["zero_size"] = _zero_size(comm)
    out["all_reduce"] = _all_reduce(comm)
    out["broadcast"] = _broadcast(comm)
    out["all_to_all"] = _all_to_all(comm)
    out["allgather_object"] = comm.allgather_object({"rank": comm.rank, "s": "x" * comm.rank})
    out["errors"] = _errors(comm)
    out["stream"] = {str(d): _stream(comm, d) for d in (0, 1, 2)}
    out["isolation"] = _isolation(ctx)
    out["sync"] = _sync(ctx)
    out["short_message"] = _short_message(ctx)
    comm.barrier()
    out["timeout"] = _timeout(ctx, sync_dir)  # last: a gloo group is unusable after a timeout
    return out


# ----------------------------------------------------------------------------- test side
@pytest.fixture(scope="module", params=CONFIGS, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def launch(request, tmp_path_factory):
    launcher, backend, world_size = request.param
    if launcher == "mpiexec" and not has_mpi():
        pytest.skip("needs mpiexec and mpi4py")
    results = run_on_ranks(f"{os.path.abspath(__file__)}:primitive_cases", world_size,
                           launcher=launcher, backend=backend, timeout=240, comm_timeout=60,
                           kwargs={"sync_dir": str(tmp_path_factory.mktemp("sync"))})
    return request.param, results


def expected_list(t: torch.Tensor) -> list:
    return as_list(t)


def test_launch_layout(launch):
    (launcher, backend, P), results = launch
    assert [res["rank"] for res in results] == list(range(P))
    assert all(res["world_size"] == P and res["backend"] == backend for res in results)


@pytest.mark.parametrize("dtype", DTYPES)
def test_isend_irecv_values(launch, dtype):
    (_, _, P), results = launch
    for r, res in enumerate(results):
        got = res["p2p"][dtype]
        assert sorted(got) == sorted(str(q) for q in range(P) if q != r)
        for q, values in got.items():
            assert values == expected_list(make(int(q), r, 3, dtype)), (r, q)


def test_tags_and_zero_size(launch):
    (_, _, P), results = launch
    for r, res in enumerate(results):
        left = (r - 1) % P
        assert res["tags"] == [[1.0, left], [2.0, left]]
        assert res["zero_size"] == [0, 4]


def test_all_reduce(launch):
    (_, _, P), results = launch
    for r, res in enumerate(results):
        got = res["all_reduce"]
        for dtype in ("float64", "float32", "bfloat16", "float16", "int64"):
            want = sum(make(q, 0, 2, dtype).double() for q in range(P))
            assert torch.allclose(torch.tensor(got[f"sum_{dtype}"], dtype=torch.float64), want,
                                  rtol=1e-2 if "16" in dtype else 1e-12), dtype
        assert got["max_int64"] == [P - 1, 0, 7]
        assert got["min_int64"] == [0, -(P - 1), 7]
        assert got["sum_bool"] == [True, False, True]
        assert got["min_bool"] == [False, True]
        total = sum(range(1, P + 1))
        assert got["noncontig"] == [[r + 1.0, total, r + 1.0]] * 2  # only column 1 reduced


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast(launch, dtype):
    (_, _, P), results = launch
    for res in results:
        assert res["broadcast"][dtype] == expected_list(make(P - 1, 0, 2, dtype))
        assert res["broadcast"]["noncontig"] == [[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "bool"])
def test_all_to_all_single_uneven(launch, dtype):
    (_, _, P), results = launch
    for r, res in enumerate(results):
        want = torch.cat([make(q, r, split_rows(q, r), dtype) for q in range(P)])
        assert res["all_to_all"][dtype] == expected_list(want)
        assert res["all_to_all"]["equal_1d"] == [100.0 * q + 2 * r + i
                                                 for q in range(P) for i in range(2)]


def test_allgather_object(launch):
    (_, _, P), results = launch
    want = [{"rank": q, "s": "x" * q} for q in range(P)]
    assert all(res["allgather_object"] == want for res in results)


def test_bad_input_raises(launch):
    (_, _, P), results = launch
    for res in results:
        errors = res["errors"]
        assert "summing to" in errors["bad_splits"] and str([2] * P) in errors["bad_splits"]
        assert f"got {P}" in errors["bad_peer"]
        assert "'mean'" in errors["bad_op"]
        assert "JSON" in errors["bad_object"]


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_streaming_schedule(launch, depth):
    (_, _, P), results = launch
    for r, res in enumerate(results):
        seen = res["stream"][str(depth)]
        assert [s[0] for s in seen] == list(range(1, P))
        assert [s[1] for s in seen] == [(r + k) % P for k in range(1, P)]
        for _, src, values in seen:  # exactly the rows src meant for r
            assert values == expected_list(make(src, r, stream_rows(src, r), "float64"))


def test_sar_communicator_is_isolated(launch):
    (_, _, P), results = launch
    for res in results:
        assert res["isolation"] == [sum(1.0 + q for q in range(P)),
                                    sum(100.0 * (q + 1) for q in range(P))]


def test_all_reduce_gradients(launch):
    (_, _, P), results = launch
    want = {}
    for q in range(P):  # the single-process sum of every rank's gradient
        torch.manual_seed(0)
        model = GradModel()
        model(q).backward()
        for n, p in model.named_parameters():
            if p.grad is not None:
                want[n] = want.get(n, 0) + p.grad
    for res in results:
        grads = res["sync"]["grads"]
        assert grads["unused"] is None
        for n, g in want.items():
            assert torch.allclose(torch.tensor(grads[n], dtype=torch.float64), g.double(),
                                  rtol=1e-6 if n == "w32" else 1e-12, atol=0), n


def test_broadcast_parameters(launch):
    _, results = launch
    source = results[0]["sync"]["before"]
    assert all(res["sync"]["before"] != source for res in results[1:])  # differed before
    for res in results:
        assert res["sync"]["state"] == source
        assert res["sync"]["state"]["1.running_mean"] != [0.0] * 4  # buffers too


def test_timeout_names_rank_peer_and_operation(launch):
    _, results = launch
    msg = results[1]["timeout"]
    assert msg.startswith("pyg_sar: rank 1 timed out after 1.0 s in irecv from rank 0 (tag 7)")


def test_mpi_short_message_is_an_error(launch):
    (_, backend, _), results = launch
    if backend != "mpi":
        pytest.skip("size check of received messages is specific to the MPI communicator")
    assert results[1]["short_message"] == ("pyg_sar: rank 1 irecv from rank 0 (tag 11) "
                                           "received 12 bytes, expected 16")
