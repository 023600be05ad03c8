"""Join checks at start-up: every rank must arrive within the timeout, and the ones that
never do are named (instead of a hang, or a rendezvous error that only counts them).

The joins over MPI and the ``env://`` store are plain waits with a deadline that raise a
``RuntimeError`` naming the missing ranks; they run on every multi-rank :func:`pyg_sar.init`.
The deadline of MPI_Init itself (:func:`import_mpi_with_deadline`) needs a guard process that
may end the rank, and runs under failure supervision only."""
from __future__ import annotations

import os
import sys
import time
from datetime import timedelta
from pathlib import Path

_JOIN_TAG = 31_415
_GUARD = str(Path(__file__).with_name("mpi_init_guard.py"))  # run as a script (stdlib only)
_generation = 0  # init() calls in this process: keys of one call never match another's
_STORE = None  # ((addr, port, rank, world_size), the rendezvous TCPStore), kept for re-init


def _missing_text(missing: list[int], world_size: int, seconds: float) -> str:
    return (f"rank(s) {missing} of {world_size} never joined within {seconds:.1f} s (not "
            f"started, crashed before pyg_sar.init, or unreachable)")




def import_mpi_with_deadline(seconds: float, rank: int, world_size: int):
    """``from mpi4py import MPI`` (which runs MPI_Init) with a deadline.

    MPI_Init waits for every rank of the launch and holds the GIL while it does, so no Python
    thread can time it out: a tiny guard process does, and ends this one (SIGKILL) with a
    message if MPI is not up in time. It can end the process, so :func:`pyg_sar.init` uses it
    under failure supervision only; the guard has exited when this returns. Each guard holds
    an abstract Unix socket named after the launch (host and launcher process) and its rank
    while it waits, so the one that fires names the ranks that never arrived when all ranks
    share the host (``MPI_LOCALNRANKS``).
    """
    import socket
    import subprocess
    if "mpi4py.MPI" in sys.modules:
        from mpi4py import MPI
        return MPI
    read_fd, write_fd = os.pipe()
    message = (f"pyg_sar.init: rank {rank}: MPI_Init did not complete within {seconds:.1f} s "
               f"(it waits for every rank of this {world_size}-rank launch)")
    local = int(os.environ.get("MPI_LOCALNRANKS", "0") or 0)
    key = f"{socket.gethostname()}-{os.getppid()}"
    guard = subprocess.Popen([sys.executable, "-I", "-S", _GUARD, str(read_fd),
                              str(seconds), str(os.getpid()), str(rank), str(world_size),
                              str(local), key, message], pass_fds=(read_fd,),
                             stdin=subprocess.DEVNULL, start_new_session=True)
    os.close(read_fd)
    try:
        from mpi4py import MPI
    finally:
        os.close(write_fd)  # the guard sees EOF and exits
        guard.wait()
    return MPI


def join_mpi(mpi_comm, seconds: float) -> None:
    """Point-to-point join over ``mpi_comm`` (``COMM_WORLD``) with a deadline: the others
    report to rank 0, which answers with the list of ranks that never did."""
    import numpy as np
    from mpi4py import MPI
    rank, size = mpi_comm.Get_rank(), mpi_comm.Get_size()
    deadline = time.monotonic() + seconds
    if rank == 0:
        flags = [np.zeros(1, dtype=np.int64) for _ in range(size)]
        reqs = {r: mpi_comm.Irecv([flags[r], MPI.INT64_T], source=r, tag=_JOIN_TAG)
                for r in range(1, size)}
        joined = {0}
        while len(joined) < size and time.monotonic() < deadline:
            joined |= {r for r, q in reqs.items() if r not in joined and q.Test()}
            time.sleep(0.005)
        missing = sorted(set(range(size)) - joined)
        verdict = np.full(size, -1, dtype=np.int64)
        verdict[:len(missing)] = missing
        sends = [mpi_comm.Isend([verdict, MPI.INT64_T], dest=r, tag=_JOIN_TAG + 1)
                 for r in sorted(joined - {0})]
        while sends and not all(q.Test() for q in sends) and time.monotonic() < deadline + 5:
            time.sleep(0.005)
        for r in missing:
            try:
                reqs[r].Cancel()
            except Exception:  # noqa: BLE001 - we raise below anyway
                pass
        if missing:
            raise RuntimeError(f"pyg_sar.init: rank 0: {_missing_text(missing, size, seconds)}")
        return
    mine = np.array([rank], dtype=np.int64)
    mpi_comm.Isend([mine, MPI.INT64_T], dest=0, tag=_JOIN_TAG)
    verdict = np.zeros(size, dtype=np.int64)
    req = mpi_comm.Irecv([verdict, MPI.INT64_T], source=0, tag=_JOIN_TAG + 1)
    while not req.Test():
        if time.monotonic() > deadline + 10:  # rank 0 answers by its deadline
            raise RuntimeError(f"pyg_sar.init: rank {rank}: rank 0 never answered the join "
                               f"within {seconds:.1f} s: {_missing_text([0], size, seconds)}")
        time.sleep(0.005)
    missing = [int(r) for r in verdict if r >= 0]
    if missing:
        raise RuntimeError(f"pyg_sar.init: rank {rank}: {_missing_text(missing, size, seconds)}")


def torch_store(rank: int, world_size: int, seconds: float):
    """The ``env://`` rendezvous store (``MASTER_ADDR``/``MASTER_PORT``, the store torchrun's
    agent hosts when it has one), after every rank has joined it; names missing ranks."""
    global _generation
    _generation += 1
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if not addr or not port:
        raise RuntimeError("pyg_sar.init: RANK/WORLD_SIZE are set but MASTER_ADDR and "
                           "MASTER_PORT are not (where do the ranks meet?)")
    from torch.distributed import PrefixStore, TCPStore
    # torchrun's agent hosts the store when it says so (what torch's env:// rendezvous checks;
    # public equivalents of torch.distributed.rendezvous's private helpers, so no private API).
    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == str(True)
    global _STORE
    if _STORE is not None and _STORE[0] == (addr, port, rank, world_size):
        # Re-init in the same process: keep the one store (rank 0's server must not go away
        # while a faster rank already looks for the next generation's keys).
        return _joined(_STORE[1], PrefixStore, rank, world_size, seconds)
    try:
        if agent:  # every rank is a client of the agent's store
            store = TCPStore(addr, int(port), world_size, is_master=False,
                             timeout=timedelta(seconds=seconds))
        else:  # rank 0 hosts it; the join below (not the store) waits for the others
            store = TCPStore(addr, int(port), world_size, is_master=rank == 0,
                             timeout=timedelta(seconds=seconds), wait_for_workers=False,
                             multi_tenant=True)
    except Exception as e:  # noqa: BLE001 - the connection error says little about why
        if rank == 0 and not agent:
            raise RuntimeError(f"pyg_sar.init: rank 0 could not open the rendezvous store at "
                               f"{addr}:{port} ({str(e).splitlines()[0]})") from None
        raise RuntimeError(
            f"pyg_sar.init: rank {rank} could not reach the rendezvous store at {addr}:{port} "
            f"within {seconds:.1f} s: rank 0, which hosts it, never joined (not started, or "
            f"MASTER_ADDR/MASTER_PORT are wrong) ({str(e).splitlines()[0]})") from None
    _STORE = ((addr, port, rank, world_size), store)
    return _joined(store, PrefixStore, rank, world_size, seconds)


def _joined(store, prefix_store, rank: int, world_size: int, seconds: float):
    """Wait until every rank has set its key of this generation; returns a store private to
    this generation (so keys of an earlier process group are never read again)."""
    prefix = f"pyg_sar/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/{_generation}"
    keys = [f"{prefix}/join/{r}" for r in range(world_size)]
    store.set(keys[rank], "1")
    # Rank 0 hosts the store (without torchrun's agent): it waits longest, so that the
    # others can still read which ranks are missing.
    wait = seconds + (3.0 if rank == 0 else 0.0)
    try:
        store.wait(keys, timedelta(seconds=wait))
    except Exception as e:  # noqa: BLE001 - timeout or the store host went away
        try:
            missing = [r for r, k in enumerate(keys) if not store.check([k])]
        except Exception:  # noqa: BLE001
            raise RuntimeError(f"pyg_sar.init: rank {rank}: the rendezvous store went away "
                               f"while waiting for the other ranks ({e})") from None
        raise RuntimeError(f"pyg_sar.init: rank {rank}: "
                           f"{_missing_text(missing, world_size, seconds)}") from None
    return prefix_store(f"{prefix}/pg/", store)
