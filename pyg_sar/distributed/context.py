r"""Process bootstrap: find the launcher, set up the backend, and tear it down at exit.

:func:`init` recognises ``mpiexec`` (MPICH/Intel MPI ``PMI_*``, Open MPI ``OMPI_COMM_WORLD_*``,
MVAPICH, PMIx; or ``mpi4py.MPI.COMM_WORLD`` larger than one when ``backend="mpi"`` is asked for),
``torchrun`` or any launcher that sets ``RANK``/``WORLD_SIZE``/``MASTER_ADDR``/``MASTER_PORT``,
Slurm's ``srun`` (see :func:`slurm_step`), and a plain single process. mpi4py is imported only
under an MPI launcher (or when asked for).

For torch.distributed backends under ``mpiexec``, rank 0 opens a ``TCPStore`` on a free port of
its host and sends address and port to the others over MPI: no shared file, no hand-set
variable. SAR traffic always runs on a communicator of its own (``COMM_WORLD.Dup()`` or
``dist.new_group()``), so collectives of DDP or user code on the default group cannot interleave.
"""
from __future__ import annotations

import atexit
import os
import socket
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Optional

import torch

from pyg_sar._extras import install_hint, is_missing
from pyg_sar.distributed import address
from pyg_sar.distributed.transport import (
    Communicator,
    GlooCommunicator,
    LocalCommunicator,
    MPICommunicator,
    NCCLCommunicator,
)

if TYPE_CHECKING:
    from pyg_sar.distributed.supervision import Supervisor

BACKENDS = ("mpi", "gloo", "nccl")
DEFAULT_TIMEOUT = 120.0

# Environment variables that only an MPI launcher sets (rank variable, size variable).
_MPI_ENV = (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
            ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"), ("PMIX_RANK", None),
            ("MPI_LOCALRANKID", None))
_LOCAL_RANK_ENV = ("LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK",
                   "MV2_COMM_WORLD_LOCAL_RANK")
_LOCAL_SIZE_ENV = ("LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE",
                   "MV2_COMM_WORLD_LOCAL_SIZE")
# What srun's MPI plugins set: --mpi=pmi2 (PMI_FD, PMI_RANK), --mpi=pmix (PMIX_RANK).
_SLURM_PMI_ENV = ("PMI_FD", "PMI_RANK", "PMIX_RANK")
SLURM_DEFAULT_PORT = 29500  # MASTER_PORT under srun without MPI: this + SLURM_JOB_ID % 10000


@dataclass(frozen=True)
class SlurmStep:
    """What a task of an ``srun`` job step knows from Slurm's environment.

    Attributes:
        rank: ``SLURM_PROCID``.
        world_size: ``SLURM_STEP_NUM_TASKS``.
        local_rank: ``SLURM_LOCALID``.
        local_world_size: this node's entry of ``SLURM_STEP_TASKS_PER_NODE`` (``SLURM_NODEID``).
        nodes: the step's nodes, ``SLURM_STEP_NODELIST`` expanded.
        cpus_per_task: ``SLURM_CPUS_PER_TASK`` (``None`` when not given to srun/sbatch).
        job_id: ``SLURM_JOB_ID``.
        pmi: whether srun's MPI plugin set PMI variables (``--mpi=pmi2`` or ``pmix``).
    """

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    nodes: tuple[str, ...]
    cpus_per_task: Optional[int]
    job_id: int
    pmi: bool


def slurm_step() -> Optional[SlurmStep]:
    """This process as a task of an ``srun`` step, or ``None`` (not in a step, or started by
    a launcher inside the step: ``torchrun``, or ``mpiexec`` whose world differs from the step).

    Raises:
        RuntimeError: a Slurm variable that cannot be parsed (named with its value).
    """
    if "SLURM_STEP_NUM_TASKS" not in os.environ or "SLURM_PROCID" not in os.environ:
        return None
    tasks = _env_int("SLURM_STEP_NUM_TASKS")
    if "TORCHELASTIC_RUN_ID" in os.environ or (
            "RANK" in os.environ and "WORLD_SIZE" in os.environ
            and _env_int("WORLD_SIZE") != tasks):
        return None  # torchrun (or a hand-set world) inside the step decides
    sizes = [_env_int(s) for _, s in _MPI_ENV if s is not None and s in os.environ]
    if sizes and sizes[0] != tasks:
        return None  # mpiexec (Hydra) started inside the step: its ranks are not the tasks
    try:
        nodes = tuple(address.expand_hostlist(os.environ.get("SLURM_STEP_NODELIST", "")))
        per_node = address.expand_tasks_per_node(os.environ.get("SLURM_STEP_TASKS_PER_NODE",
                                                                str(tasks)))
    except ValueError as e:
        raise RuntimeError(str(e)) from None
    node = _env_int("SLURM_NODEID") or 0
    rank = _env_int("SLURM_PROCID")
    if not 0 <= rank < tasks:
        raise RuntimeError(f"pyg_sar: SLURM_PROCID={rank} is not in [0, "
                           f"SLURM_STEP_NUM_TASKS={tasks})")
    return SlurmStep(rank=rank, world_size=tasks, local_rank=_env_int("SLURM_LOCALID") or 0,
                     local_world_size=per_node[node] if node < len(per_node) else 1,
                     nodes=nodes, cpus_per_task=_env_int("SLURM_CPUS_PER_TASK"),
                     job_id=_env_int("SLURM_JOB_ID") or 0,
                     pmi=any(v in os.environ for v in _SLURM_PMI_ENV))


def check_slurm_mpi_world(mpi_size: int, step: SlurmStep) -> None:
    """MPI's world must be the step's tasks. srun without the MPI plugin the library speaks
    starts every task as an MPI world of its own: caught here instead of training N
    separate one-rank jobs."""
    if mpi_size == step.world_size:
        return
    if mpi_size == 1:
        raise RuntimeError(
            f"pyg_sar.init: srun started {step.world_size} tasks but MPI sees a world of 1: "
            f"use srun --mpi=pmi2 (MPICH) or --mpi=pmix (Open MPI)")
    raise RuntimeError(f"pyg_sar.init: srun started {step.world_size} tasks but MPI sees a "
                       f"world of {mpi_size}")


def slurm_rendezvous(step: SlurmStep) -> tuple[str, str]:
    """``MASTER_ADDR`` and ``MASTER_PORT`` for a step without MPI: the environment's, else the
    step's first node (rank 0's, as srun places tasks in node order) and ``29500 +
    SLURM_JOB_ID % 10000``. A node name that does not resolve is looked up in Slurm's own
    node table (``scontrol show node``: its ``NodeAddr``)."""
    port = os.environ.get("MASTER_PORT") or str(SLURM_DEFAULT_PORT + step.job_id % 10000)
    if os.environ.get("MASTER_ADDR"):
        return os.environ["MASTER_ADDR"], port
    if not step.nodes:
        raise RuntimeError("pyg_sar.init: SLURM_STEP_NODELIST is not set; set MASTER_ADDR")
    node = step.nodes[0]
    try:
        return socket.getaddrinfo(node, None, socket.AF_INET)[0][4][0], port
    except OSError:
        pass
    import subprocess
    try:
        out = subprocess.run(["scontrol", "show", "node", "-o", node], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    addr = next((f[len("NodeAddr="):] for f in out.split() if f.startswith("NodeAddr=")), None)
    if not addr:
        raise RuntimeError(f"pyg_sar.init: the step's first node {node!r} does not resolve and "
                           f"scontrol names no NodeAddr for it; set MASTER_ADDR")
    return addr, port


def _warn_batch_script() -> None:
    """An sbatch script (SLURM_NTASKS > 1, no step) runs once: the ranks come from srun."""
    ntasks = os.environ.get("SLURM_NTASKS", "")
    if "SLURM_JOB_ID" in os.environ and ntasks.isdigit() and int(ntasks) > 1:
        warnings.warn(f"pyg_sar.init: this process runs in a Slurm job of {ntasks} tasks but "
                      f"outside a job step (the batch script itself): running as one process. "
                      f"Launch with srun (srun --mpi=pmi2 python ...) to start {ntasks} ranks.",
                      stacklevel=3)


@dataclass(eq=False)
class DistContext:
    """Everything a rank knows about the distributed run; passed explicitly where needed.

    Attributes:
        rank: this process's rank.
        world_size: number of ranks.
        backend: ``"mpi"``, ``"gloo"``, ``"nccl"``, or ``"local"`` for one process.
        device: where this rank computes (``cuda:<local_rank>`` for nccl, else ``cpu``
            unless :func:`init` was given a device; see :func:`select_device`).
        launcher: ``"mpiexec"``, ``"torchrun"`` (any launcher that sets ``RANK``/``WORLD_SIZE``),
            ``"slurm"`` (a task of an ``srun`` step) or ``"none"``.
        comm: the :class:`~pyg_sar.distributed.transport.Communicator` SAR traffic uses
            (a :class:`~pyg_sar.distributed.supervision.SupervisedCommunicator` around the
            backend's when failure supervision is on).
        timeout: deadline of every blocking wait, in seconds.
        num_threads: the intra-op thread count set for (or found in) this process.
        local_rank: rank among the ranks on this host.
        local_world_size: number of ranks on this host.
        torch_distributed: whether ``torch.distributed``'s default group is initialised (for
            DDP); created by :func:`init` or found already there.
        supervised: whether failure supervision wraps ``comm`` (see :attr:`supervisor`).
    """

    rank: int
    world_size: int
    backend: str
    device: torch.device
    launcher: str
    comm: Communicator
    timeout: float
    num_threads: int
    local_rank: int = 0
    local_world_size: int = 1
    torch_distributed: bool = False
    supervised: bool = False
    _owns_default_group: bool = field(default=False, repr=False)
    _bootstrap_comm: Optional[Communicator] = field(default=None, repr=False)

    @property
    def supervisor(self) -> Optional[Supervisor]:
        """The :class:`~pyg_sar.distributed.supervision.Supervisor` of this rank when failure
        supervision is on, else ``None``."""
        return getattr(self.comm, "supervisor", None)


_CONTEXT: Optional[DistContext] = None
# Called with the new context at the end of init() (on every rank, so a callback may
# communicate): a model converted before the job's context existed takes rank 0's parameters
# then (pyg_sar.nn.grad_sync), before anything of it runs.
_ON_INIT: list[Callable[[DistContext], None]] = []


def call_after_init(callback: Callable[[DistContext], None]) -> None:
    """Call ``callback(context)`` at the end of every :func:`init` (once per callback)."""
    if callback not in _ON_INIT:
        _ON_INIT.append(callback)
_ATEXIT_REGISTERED = False


def get_context() -> Optional[DistContext]:
    """The context created by :func:`init`, or ``None`` before it (or after :func:`shutdown`)."""
    return _CONTEXT


def resolve_context(where: Any = None, *, create: bool = True) -> Optional[DistContext]:
    """The context to communicate in, from what the caller has: a :class:`DistContext`, or
    anything that carries one as ``.context`` (a :class:`~pyg_sar.DistGraph`). ``None``: the
    one :func:`init` made; if there is none, :func:`init` makes it (``create``) or the answer
    is ``None`` (``create=False``: the caller then runs as one process).

    The one place where the process-wide context is read: the public functions that take an
    optional context (losses, batch norm, gradient sync, checkpoints, loaders) resolve it
    here, at the API's edge; the engine and the transport only use the context they are given.
    """
    if where is None:
        if _CONTEXT is not None or not create:
            return _CONTEXT
        return init()
    if isinstance(where, DistContext):
        return where
    context = getattr(where, "context", None)
    if isinstance(context, DistContext):
        return context
    raise TypeError(f"pyg_sar: expected a DistContext or a DistGraph (got "
                    f"{type(where).__name__})")


def communicator_of(context: Any = None):
    """The communicator of ``context`` (a :class:`DistContext` or a
    :class:`~pyg_sar.DistGraph`), or of the process's context when ``None``; ``None`` when
    there is no context or it has one rank (no communication). Used by the global losses and
    metrics (:mod:`pyg_sar.nn.functional`, :mod:`pyg_sar.link.metrics`)."""
    ctx = resolve_context(context, create=False)
    return ctx.comm if ctx is not None and ctx.world_size > 1 else None


def _env_int(name: Optional[str]) -> Optional[int]:
    if name is None or name not in os.environ:
        return None
    try:
        return int(os.environ[name])
    except ValueError:
        raise RuntimeError(f"pyg_sar: environment variable {name}={os.environ[name]!r} is not "
                           f"an integer") from None


def detect_launcher() -> str:
    """``"slurm"``, ``"mpiexec"``, ``"torchrun"`` or ``"none"``, from the environment only
    (imports nothing)."""
    if slurm_step() is not None:
        return "slurm"
    if any(rank_var in os.environ for rank_var, _ in _MPI_ENV):
        size_vars = [s for _, s in _MPI_ENV if s is not None and s in os.environ]
        # A one-rank MPI launch with torchrun variables set is a torchrun launch.
        if not (size_vars and _env_int(size_vars[0]) == 1 and "WORLD_SIZE" in os.environ):
            return "mpiexec"
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return "torchrun"
    return "none"


def _import_mpi(reason: str, seconds: Optional[float] = None):
    try:
        if seconds is not None:  # under mpiexec: MPI_Init blocks until every rank starts it
            from pyg_sar.distributed.join import import_mpi_with_deadline
            rank = next((_env_int(r) for r, _ in _MPI_ENV if r in os.environ), 0)
            size = next((_env_int(s) for _, s in _MPI_ENV if s and s in os.environ), 0)
            return import_mpi_with_deadline(seconds, rank, size)
        from mpi4py import MPI
    except Exception as e:  # noqa: BLE001 - ImportError or a broken MPI library
        if isinstance(e, ImportError) and is_missing(e, "mpi4py"):
            raise RuntimeError(f"pyg_sar: {reason}, but mpi4py is not installed: "
                               f"{install_hint('mpi4py')} (or launch with torchrun, or run one "
                               f"process)") from e
        raise RuntimeError(f"pyg_sar: {reason}, but mpi4py could not be imported: {e}") from e
    return MPI


def _set_threads(local_world_size: int, cpus_per_task: Optional[int] = None) -> int:
    """Intra-op threads: the cores this rank may use (Slurm's ``--cpus-per-task`` when given),
    else shared among the ranks on its host."""
    if "OMP_NUM_THREADS" in os.environ:
        return torch.get_num_threads()
    if cpus_per_task:
        torch.set_num_threads(cpus_per_task)
    else:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not Linux
            cores = os.cpu_count() or 1
        torch.set_num_threads(max(1, cores // max(1, local_world_size)))
    return torch.get_num_threads()


def select_device(device: Optional[torch.device | str], backend: str, local_rank: int,
                  device_count: Optional[int] = None) -> torch.device:
    """The device a rank computes on.

    ``None``: ``cuda:<local_rank>`` for nccl, else ``cpu``. ``"cuda"`` without an index:
    ``cuda:<local_rank % device_count>``, so that ranks share the GPUs of their host when
    there are more ranks than GPUs (with gloo or mpi, which stage GPU tensors through the
    host; nccl needs one GPU per rank, see :func:`check_nccl_devices`). An explicit
    ``cuda:<i>`` is kept (checked to exist).

    Raises:
        ValueError: nccl with a non-CUDA device, or a CUDA index this host does not have.
        RuntimeError: a CUDA device asked for where CUDA is not available.
    """
    want = torch.device(device) if device is not None else (
        torch.device("cuda") if backend == "nccl" else torch.device("cpu"))
    if backend == "nccl" and want.type != "cuda":
        raise ValueError(f"pyg_sar.init: backend 'nccl' computes on CUDA devices "
                         f"(got device={device!r})")
    if want.type != "cuda":
        return want
    if device_count is None:
        if not torch.cuda.is_available():
            raise RuntimeError(f"pyg_sar.init: device {str(want)!r} was asked for, but CUDA is "
                               f"not available (torch {torch.__version__}, CUDA build: "
                               f"{torch.version.cuda})")
        device_count = torch.cuda.device_count()
    if device_count < 1:
        raise RuntimeError("pyg_sar.init: a CUDA device was asked for, but none is visible")
    if want.index is None:
        index = local_rank if backend == "nccl" else local_rank % device_count
        return torch.device("cuda", index)
    if not 0 <= want.index < device_count:
        raise ValueError(f"pyg_sar.init: device {str(want)!r} does not exist ({device_count} "
                         f"CUDA device(s) visible)")
    return want


def check_nccl_devices(local_rank: int, local_world_size: Optional[int],
                       device_count: Optional[int] = None) -> None:
    """NCCL needs one GPU per rank (it refuses two ranks on one device): fail early, saying
    what to use instead, when this host has fewer GPUs than ranks."""
    count = torch.cuda.device_count() if device_count is None else device_count
    ranks = max(local_rank + 1, local_world_size or 0)
    if ranks > count:
        raise RuntimeError(
            f"pyg_sar.init: backend 'nccl' needs one GPU per rank, but this host runs {ranks} "
            f"rank(s) (local rank {local_rank}) on {count} GPU(s). To share GPUs, use "
            f"backend='gloo' (or 'mpi') with device='cuda': tensors then cross through "
            f"host memory.")


def _init_default_group(backend: str, rank: int, world_size: int, timeout: float,
    bootstrap: Optional[Communicator]) -> bool:
    """Initialise torch.distributed's default group unless there is one; returns whether we
    created it (and so must destroy it at shutdown)."""
    import torch.distributed as dist
    if dist.is_initialized():
        if dist.get_rank() != rank or dist.get_world_size() != world_size:
            raise RuntimeError(
    f"pyg_sar: torch.distributed is already initialised as rank {dist.get_rank()} "
                f"of {dist.get_world_size()}, but the launcher says rank {rank} of {world_size}")
        return False
    td = timedelta(seconds=timeout)
    if bootstrap is None and world_size > 1:  # torchrun: env:// rendezvous
        from pyg_sar.distributed.join import torch_store
        if backend == "gloo":
            address.use_interface_towards(os.environ.get("MASTER_ADDR"))
        store = torch_store(rank, world_size, timeout)  # names ranks that never join
        dist.init_process_group(backend, store=store, rank=rank, world_size=world_size,
                                timeout=td)
        return True
    # Rendezvous over MPI (or alone): rank 0 opens a store on a port the OS picks, at the
    # address the others reach it by (MASTER_ADDR if set; never its resolved hostname).
    described = bootstrap.allgather_object(address.describe_self()) if bootstrap else None
    if rank == 0:
        host = os.environ.get("MASTER_ADDR") or (
            address.choose_address(described, 0) if described else "127.0.0.1")
        store = dist.TCPStore(host, 0, world_size, True, td, wait_for_workers=False)
        endpoint = [host, store.port]
    else:
        endpoint = None
    if bootstrap is not None:
        endpoint = _broadcast_object(bootstrap, endpoint)
    if backend == "gloo" and world_size > 1:
        address.use_interface_towards(endpoint[0])
    if rank != 0:
        store = dist.TCPStore(endpoint[0], int(endpoint[1]), world_size, False, td)
    dist.init_process_group(backend, store=store, rank=rank, world_size=world_size, timeout=td)
    return True


def _broadcast_object(comm: Communicator, obj: Any) -> Any:
    """Rank 0's JSON-able object on every rank (an allgather: the objects are tiny)."""
    return comm.allgather_object(obj)[0]


def _check_same(ctx: DistContext, backend, timeout, device, init_torch_distributed,
                supervise) -> None:
    conflicts = []
    if backend is not None and backend != ctx.backend:
        conflicts.append(f"backend={backend!r} (context has {ctx.backend!r})")
    if timeout is not None and float(timeout) != ctx.timeout:
        conflicts.append(f"timeout={timeout!r} (context has {ctx.timeout})")
    if device is not None and torch.device(device) != ctx.device:
        want = torch.device(device)
        if not (want.index is None and want.type == ctx.device.type):
            conflicts.append(f"device={device!r} (context has {ctx.device})")
    if init_torch_distributed is not None and bool(init_torch_distributed) != \
            ctx.torch_distributed:
        conflicts.append(f"init_torch_distributed={init_torch_distributed!r} (context has "
                         f"{ctx.torch_distributed})")
    if supervise is not None and bool(supervise) != ctx.supervised and ctx.world_size > 1:
        conflicts.append(f"supervise={supervise!r} (context has {ctx.supervised})")
    if conflicts:
        raise RuntimeError("pyg_sar.init: already initialised with different arguments: "
                           + "; ".join(conflicts) + ". Call pyg_sar.shutdown() first.")


def init(backend: Optional[str] = None, timeout: Optional[float] = None,
         device: Optional[torch.device | str] = None,
         init_torch_distributed: Optional[bool] = None,
         supervise: Optional[bool] = None) -> DistContext:
    r"""Set up communication for this process and return its :class:`DistContext`.

    Idempotent: a second call returns the same context (and raises if its arguments conflict).

    Args:
        backend: ``"mpi"`` (default under ``mpiexec``), ``"gloo"`` (default under ``torchrun``)
            or ``"nccl"`` (CUDA tensors). ``None`` picks the default for the launcher.
        timeout: deadline of every blocking wait, in seconds (default 120).
        device: device to compute on; default ``cuda:<local_rank>`` for nccl, else ``cpu``.
            ``"cuda"`` picks ``cuda:<local_rank % device_count>`` (see :func:`select_device`):
            with gloo or mpi several ranks may share a GPU, their traffic staged through host
            memory (:mod:`pyg_sar.distributed.transport.staging`).
        init_torch_distributed: also initialise torch.distributed's default group so that
            ``DistributedDataParallel`` works. Always done for gloo/nccl; with ``"mpi"`` it
            sets up a gloo default group (rendezvous over MPI). Default: only when needed.
        supervise: failure supervision (:mod:`pyg_sar.distributed.supervision`): a failed
            or killed rank stops every other rank at once, naming it. It starts a heartbeat
            thread, a witness process per rank under a launcher, a deadline guard around
            MPI_Init, and replaces ``sys.excepthook`` until :func:`shutdown`. Default: off
            (``init`` then starts no thread or process and installs no hook), unless
            ``PYG_SAR_SUPERVISE=1``; ``python -m pyg_sar.train`` turns it on.
    """
    global _CONTEXT, _ATEXIT_REGISTERED
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"pyg_sar.init: backend must be one of {BACKENDS} or None "
                         f"(got {backend!r})")
    if timeout is not None and not float(timeout) > 0:
        raise ValueError(f"pyg_sar.init: timeout must be > 0 seconds (got {timeout!r})")
    if _CONTEXT is not None:
        _check_same(_CONTEXT, backend, timeout, device, init_torch_distributed, supervise)
        return _CONTEXT
    if backend in ("gloo", "nccl") and init_torch_distributed is False:
        raise ValueError(f"pyg_sar.init: backend {backend!r} runs on torch.distributed; "
                         f"init_torch_distributed=False contradicts it")
    seconds = DEFAULT_TIMEOUT if timeout is None else float(timeout)
    from pyg_sar.distributed.supervision import supervision_requested
    supervise = supervision_requested(supervise)

    launcher = detect_launcher()
    step = slurm_step() if launcher == "slurm" else None
    mpi = None
    if launcher == "none" and "SLURM_JOB_ID" in os.environ:
        _warn_batch_script()
    if step is not None and (backend == "mpi" or (backend is None and step.pmi)):
        mpi = _import_mpi("srun started this process" + (" with an MPI plugin" if step.pmi
                                                         else " and backend='mpi' was asked"),
                          seconds if supervise and step.pmi else None)
        check_slurm_mpi_world(mpi.COMM_WORLD.Get_size(), step)
    elif launcher == "mpiexec":
        # Supervised, a guard process ends a rank whose MPI_Init waits past the deadline for
        # a rank that never starts; unsupervised, MPI_Init waits as MPI decides.
        mpi = _import_mpi("the process was started by an MPI launcher",
                          seconds if supervise else None)
    elif launcher == "none" and backend == "mpi":
        try:
            mpi = _import_mpi("backend='mpi' was asked for")
            if mpi.COMM_WORLD.Get_size() > 1:  # an MPI launcher we do not know by its variables
                launcher = "mpiexec"
        except RuntimeError as e:
            warnings.warn(f"{e}; running as a single process", stacklevel=2)
            mpi = None

    if launcher == "mpiexec" or (step is not None and mpi is not None):
        rank, world_size = mpi.COMM_WORLD.Get_rank(), mpi.COMM_WORLD.Get_size()
    elif step is not None:
        rank, world_size = step.rank, step.world_size
        if world_size > 1 and backend in (None, "gloo", "nccl"):
            os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = slurm_rendezvous(step)
    elif launcher == "torchrun":
        rank, world_size = _env_int("RANK"), _env_int("WORLD_SIZE")
        if not 0 <= rank < world_size:
            raise RuntimeError(f"pyg_sar: RANK={rank} is not in [0, WORLD_SIZE={world_size})")
        if backend == "mpi" and world_size > 1:
            raise ValueError("pyg_sar.init: backend 'mpi' needs an MPI launcher (mpiexec); "
                             "under torchrun use 'gloo' or 'nccl'")
    else:
        rank, world_size = 0, 1

    if backend is None:
        if world_size == 1 and launcher == "none":
            backend = "local"
        elif launcher == "mpiexec" or (launcher == "slurm" and mpi is not None):
            backend = "mpi"
        else:
            want_cuda = device is not None and torch.device(device).type == "cuda"
            backend = "nccl" if want_cuda else "gloo"
    if backend == "nccl" and not torch.cuda.is_available():
        raise RuntimeError("pyg_sar.init: backend 'nccl' needs CUDA, which is not available")

    env_local = step.local_rank if step is not None else next(
        (_env_int(v) for v in _LOCAL_RANK_ENV if v in os.environ), None)
    local_rank = env_local if env_local is not None else 0
    device_arg = device
    device = select_device(device_arg, backend, local_rank)  # checked before any connection
    if backend == "nccl":
        check_nccl_devices(local_rank, step.local_world_size if step is not None else next(
            (_env_int(v) for v in _LOCAL_SIZE_ENV if v in os.environ), None))
    if device.type == "cuda":
        torch.cuda.set_device(device)

    bootstrap: Optional[Communicator] = None
    owns_default = False
    if world_size == 1:
        comm: Communicator = LocalCommunicator(seconds)
        if init_torch_distributed or (launcher in ("torchrun", "slurm")
                                      and backend in ("gloo", "nccl")):
            owns_default = _init_default_group("nccl" if backend == "nccl" else "gloo", 0, 1,
    seconds, None)
    else:
        if mpi is not None:
            from pyg_sar.distributed.join import join_mpi
            join_mpi(mpi.COMM_WORLD, seconds)  # Dup() would block forever on a missing rank
            bootstrap = MPICommunicator(mpi.COMM_WORLD.Dup(), seconds)
        if backend == "mpi":
            comm, bootstrap = bootstrap, None
            if init_torch_distributed:
                owns_default = _init_default_group("gloo", rank, world_size, seconds, comm)
        else:
            owns_default = _init_default_group(backend, rank, world_size, seconds, bootstrap)
            import torch.distributed as dist
            group = dist.new_group(list(range(world_size)), timeout=timedelta(seconds=seconds),
    backend=backend)
            comm = NCCLCommunicator(group, seconds, device) if backend == "nccl" else \
                GlooCommunicator(group, seconds)

    if world_size > 1:
        # Who shares this host, and the addresses the watchdog's hub can be reached by.
        described = comm.allgather_object(dict(address.describe_self(),
                                               host=socket.gethostname()))
        hosts = [d["host"] for d in described]
        local_world_size = hosts.count(hosts[rank])
        if env_local is None:
            local_rank = hosts[:rank].count(hosts[rank])
            if backend != "nccl":  # the launcher did not say: share GPUs by host rank
                device = select_device(device_arg, backend, local_rank)
                if device.type == "cuda":
                    torch.cuda.set_device(device)
    else:
        local_world_size = 1

    supervise = supervise and world_size > 1
    import torch.distributed as dist
    _CONTEXT = DistContext(
    rank=rank, world_size=world_size, backend=backend, device=device, launcher=launcher,
        comm=comm, timeout=seconds, num_threads=_set_threads(
            local_world_size, step.cpus_per_task if step is not None else None),
        local_rank=local_rank, local_world_size=local_world_size,
        torch_distributed=dist.is_available() and dist.is_initialized(), supervised=supervise,
        _owns_default_group=owns_default, _bootstrap_comm=bootstrap)
    if not _ATEXIT_REGISTERED:
        # Destroy process groups before interpreter teardown: otherwise gloo's worker threads
        # are destroyed while joinable and abort the process ("terminate called without an
        # active exception") in about one run in three.
        atexit.register(_at_exit)
        _ATEXIT_REGISTERED = True
    if supervise:
        # After shutdown's atexit hook, so that its fast exit after a failure runs first.
        from pyg_sar.distributed.supervision import supervise as start_supervision
        try:
            _CONTEXT.comm = start_supervision(comm, address.choose_address(described, 0),
                                              seconds)
        except BaseException:
            shutdown()
            raise
    for callback in list(_ON_INIT):
        callback(_CONTEXT)
    return _CONTEXT


def _ended_by_uncaught_exception() -> bool:
    """Whether the interpreter is exiting because the script raised: Python records an
    uncaught exception in ``sys.last_value`` (``sys.last_exc`` from 3.12) before it exits;
    ``sys.exit`` records nothing. An interactive session (``sys.ps1``) keeps running after
    an error, so there the record says nothing about why it exits."""
    if hasattr(sys, "ps1"):
        return False
    return getattr(sys, "last_exc", None) is not None or \
        getattr(sys, "last_value", None) is not None


def _at_exit() -> None:
    """At interpreter exit: end the MPI job at once if this rank's script raised, then
    :func:`shutdown`.

    Without supervision a rank that raises under ``mpiexec`` would wait in ``MPI_Finalize``
    for ranks that themselves wait for it in their next collective until its timeout; MPICH's
    launcher ends a job only when a rank dies or aborts. ``MPI_Abort`` makes ``mpiexec`` end
    every rank now, as ``python -m mpi4py script.py`` does. Supervised runs have their own,
    faster path (the other ranks are told which rank failed and why)."""
    ctx = _CONTEXT
    if ctx is not None and ctx.world_size > 1 and ctx.launcher in ("mpiexec", "slurm") \
            and not ctx.supervised and _ended_by_uncaught_exception():
        mpi = sys.modules.get("mpi4py.MPI")
        if mpi is not None:
            sys.stderr.write(f"pyg_sar: rank {ctx.rank} raised an uncaught exception; "
                             f"aborting the MPI job so that the other ranks stop now\n")
            sys.stderr.flush()
            mpi.COMM_WORLD.Abort(1)
    shutdown()


def shutdown() -> None:
    """Destroy SAR's process group or communicator, then the default group if :func:`init`
    created it. Idempotent; runs at interpreter exit. MPI itself is finalised by mpi4py."""
    global _CONTEXT
    ctx, _CONTEXT = _CONTEXT, None
    if ctx is None:
        return
    ctx.comm.close()  # a supervised one ends supervision first (threads, process, hooks)
    if ctx._bootstrap_comm is not None:
        ctx._bootstrap_comm.close()
    if ctx._owns_default_group:
        import torch.distributed as dist
        if dist.is_initialized():
            dist.destroy_process_group()


# ------------------------------------------------- for programs: no-ops without supervision
# They act on the supervisor of the context :func:`init` made, so they live here, above
# :mod:`pyg_sar.distributed.supervision` (which never reads the process-wide context).
def _current_supervisor() -> Optional[Supervisor]:
    ctx = get_context()
    return ctx.supervisor if ctx is not None else None


def report_failure(exc: BaseException) -> None:
    """Tell every rank that this one failed with ``exc`` (done for uncaught exceptions under
    supervision; harnesses that catch a rank's exception themselves call it). A no-op without
    supervision."""
    supervisor = _current_supervisor()
    if supervisor is not None:
        supervisor.report_failure(exc)


def report_interrupt() -> None:
    """Tell every rank that this one was interrupted (see
    :meth:`~pyg_sar.distributed.supervision.Supervisor.report_interrupt`); a no-op without
    supervision."""
    supervisor = _current_supervisor()
    if supervisor is not None:
        supervisor.report_interrupt()


def release_after_interrupt() -> None:
    """See :meth:`~pyg_sar.distributed.supervision.Supervisor.release_after_interrupt`; a no-op
    without supervision."""
    supervisor = _current_supervisor()
    if supervisor is not None:
        supervisor.release_after_interrupt()
