r"""Test hosts made of Linux network namespaces: ranks on separate "hosts" talking real TCP.

:class:`NetnsHosts` creates ``n`` host namespaces and one switch namespace. Host ``i`` has an
interface ``eth0`` with address ``198.18.0.<i+1>/24`` (the benchmarking range 198.18.0.0/15,
RFC 2544) and a loopback; its veth peer ``h<i>`` sits in the switch namespace on a bridge
``br0``. Nothing is created in the caller's own network namespace, so no route, address or
interface of the machine changes and no traffic can leave it.

Commands run in a host through :meth:`NetnsHosts.command` (``ip netns exec``, plus a UTS
namespace whose hostname is ``host<i>``). The hostnames deliberately do not resolve anywhere
(no ``/etc/hosts`` entry): code that reaches a peer by resolving a hostname fails here as it
would on a cluster without DNS for its nodes.

Links can be rate-limited and delayed with ``tc`` (``tbf`` under ``netem``), on both ends of
every veth (so each direction of every link is limited). :meth:`NetnsHosts.link_bytes` reads
the switch ports' byte counters: what really crossed each link.

With ``memory="3G"`` every host gets a memory cgroup of that size
(:class:`~pyg_sar.testing.cgroup.MemoryCgroup`, no swap): every process started on the host
(the command of :meth:`NetnsHosts.command`, Hydra's proxies through the launcher script, and so
the ranks, torchrun's agents and the witnesses they start) joins it first, so a host's processes
together are held to its budget and the kernel's OOM killer ends the one that exceeds it.
:meth:`NetnsHosts.memory_peak` and :meth:`NetnsHosts.oom_kills` read each host's cgroup (its
peak includes page cache charged to it, not only the processes' resident memory).

Everything is removed by :meth:`NetnsHosts.close` (context manager exit, and ``atexit`` for
an interpreter that ends without leaving the ``with`` block); processes still running in the
namespaces are killed first. Names carry this process's id and a random suffix, so parallel
runs never collide; ``python -m pyg_sar.testing.netns down --stale`` removes what a killed run
left behind.

Command line::

    python -m pyg_sar.testing.netns check                  # can namespaces be made here?
    python -m pyg_sar.testing.netns run --hosts 2 --rate 100mbit -- CMD ...
    python -m pyg_sar.testing.netns up --hosts 2           # prints the state (JSON); keeps it
    python -m pyg_sar.testing.netns down --prefix NAME     # or: down --stale

``run`` starts ``CMD`` in the caller's namespace with ``PYG_SAR_NETNS`` set to the state JSON
(host names, namespaces, addresses) and tears everything down when it ends.
"""
from __future__ import annotations

import argparse
import atexit
import functools
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from pyg_sar.testing.cgroup import MemoryCgroup, kill_until_empty, parse_size

NAME_PREFIX = "pyg_sar"
NETWORK = ipaddress.ip_network("198.18.0.0/15")  # RFC 2544 benchmarking range
SUBNET = ipaddress.ip_network("198.18.0.0/24")
MAX_HOSTS = 8
_RATE = re.compile(r"^\d+(\.\d+)?(bit|kbit|mbit|gbit|tbit)$")
_DELAY = re.compile(r"^\d+(\.\d+)?(us|ms|s)$")
_CMD_TIMEOUT_S = 30.0  # hang detector for one `ip`/`tc` call
_STATE_DIR = Path("/run/pyg_sar-netns")

# Hydra (MPICH's mpiexec) launches its proxies through an "ssh" program: `prog [-opts] HOST
# CMD...`. This one enters the host's namespaces instead and runs CMD there as ssh would.
_LAUNCH_SCRIPT = """#!/bin/sh
# mpiexec -launcher ssh -launcher-exec THIS: enter the namespace host named by HOST, run CMD.
while [ "${1#-}" != "$1" ]; do shift; done
host="$1"; shift
setup=
case "$host" in
%(cases)s
  *) echo "pyg_sar netns launcher: unknown host '$host'" >&2; exit 255;;
esac
exec ip netns exec "$ns" unshare --uts sh -c \\
  "$setup"'echo "$0" > /proc/sys/kernel/hostname && exec sh -c "$1"' "$name" "$*"
"""


# MPICH over UCX sees that the namespace hosts share one kernel (and /dev/shm) and would move
# their data through shared memory; separate machines could not, so the ranks use TCP only.
MPI_ENV = {"UCX_TLS": "tcp,self", "FI_PROVIDER": "tcp"}


def _ip_run(args: Sequence[str], check: bool = True) -> subprocess.CompletedProcess:
    try:
        out = subprocess.run(list(args), capture_output=True, text=True, timeout=_CMD_TIMEOUT_S,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"pyg_sar.testing.netns: {' '.join(args)} did not return within "
                           f"{_CMD_TIMEOUT_S:.0f} s") from None
    if check and out.returncode != 0:
        raise RuntimeError(f"pyg_sar.testing.netns: {' '.join(args)} failed "
                           f"(exit {out.returncode}): {out.stderr.strip()}")
    return out


@functools.cache
def unavailable_reason() -> Optional[str]:
    """Why network-namespace hosts cannot be made here, or ``None`` when they can (probed once
    by creating and deleting a namespace)."""
    if sys.platform != "linux":
        return f"network namespaces need Linux (this is {sys.platform})"
    if os.geteuid() != 0:
        return "creating network namespaces needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN)"
    for tool in ("ip", "tc", "unshare"):
        if shutil.which(tool) is None:
            return f"the '{tool}' program (iproute2 / util-linux) is not installed"
    probe = f"{NAME_PREFIX}-{os.getpid()}-probe{os.urandom(2).hex()}"
    try:
        _ip_run(["ip", "netns", "add", probe])
        try:
            _ip_run(["ip", "-n", probe, "link", "add", "br0", "type", "bridge"])
            _ip_run(["ip", "netns", "exec", probe, "unshare", "--uts", "sh", "-c",
                     "echo probe > /proc/sys/kernel/hostname"])
        finally:
            _ip_run(["ip", "netns", "del", probe], check=False)
    except RuntimeError as e:
        return f"a network namespace could not be set up here: {e}"
    return None


def _check_rate(rate: Optional[str], what: str, pattern: re.Pattern) -> Optional[str]:
    if rate is None:
        return None
    if not isinstance(rate, str) or not pattern.match(rate):
        raise ValueError(f"NetnsHosts: {what} must look like "
                         f"{'100mbit / 1gbit' if pattern is _RATE else '1ms / 200us'} "
                         f"(got {rate!r})")
    return rate


def rate_bits(rate: str) -> float:
    """Bits per second of a tc rate such as ``"100mbit"``."""
    number = float(re.match(r"[\d.]+", rate).group())
    unit = rate[len(re.match(r"[\d.]+", rate).group()):]
    return number * {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12}[unit]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_OPEN: weakref.WeakSet[NetnsHosts] = weakref.WeakSet()


@atexit.register
def _close_all_open() -> None:
    for hosts in list(_OPEN):
        hosts.close()


class NetnsHosts:
    """``num_hosts`` network-namespace hosts on one bridge; see the module docstring.

    Args:
        num_hosts: 2 to 8 hosts.
        rate: per-direction rate limit of every link, ``tc`` syntax (``"100mbit"``,
            ``"1gbit"``); ``None``: unlimited (veth speed).
        delay: one-way delay added on each end of every link (``"1ms"``); ``None``: none.
        mtu: MTU of the links.
        persistent: keep the hosts when this process ends (names carry no process id, so
            ``down --stale`` leaves them; ``down --prefix`` removes them).
        memory: each host's memory budget (bytes, or ``"3G"``, ``"512M"``): one memory
            cgroup per host, swap off, which every process started on the host joins;
            ``None``: no limit. Needs writable cgroups (else :class:`RuntimeError`). Memory
            cgroups are not persistent: they go with this object.

    Use as a context manager; :meth:`close` removes everything (idempotent).
    """

    def __init__(self, num_hosts: int = 2, *, rate: Optional[str] = None,
                 delay: Optional[str] = None, mtu: int = 1500,
                 persistent: bool = False, memory: Optional[int | str] = None) -> None:
        if not isinstance(num_hosts, int) or not 1 <= num_hosts <= MAX_HOSTS:
            raise ValueError(f"NetnsHosts: num_hosts must be an integer in [1, {MAX_HOSTS}] "
                             f"(got {num_hosts!r})")
        reason = unavailable_reason()
        if reason is not None:
            raise RuntimeError(f"pyg_sar.testing.netns: {reason}")
        self.num_hosts = num_hosts
        self.rate = _check_rate(rate, "rate", _RATE)
        self.delay = _check_rate(delay, "delay", _DELAY)
        self.mtu = int(mtu)
        self.memory: Optional[int] = None if memory is None else parse_size(memory)
        if self.memory is not None and persistent:
            raise ValueError("NetnsHosts: memory= cannot be used with persistent=True (the "
                             "cgroups are removed with this object)")
        owner = 0 if persistent else os.getpid()  # 0: no process owns them
        self.prefix = f"{NAME_PREFIX}-{owner}-{os.urandom(3).hex()}"
        self.switch = f"{self.prefix}-sw"
        self.namespaces = [f"{self.prefix}-h{i}" for i in range(num_hosts)]
        self.hostnames = [f"host{i}" for i in range(num_hosts)]
        hosts = list(SUBNET.hosts())
        self.addresses = [str(hosts[i]) for i in range(num_hosts)]
        assert all(ipaddress.ip_address(a) in NETWORK for a in self.addresses)
        self._created: list[str] = []
        self.cgroups: list[MemoryCgroup] = []
        self._tmp: Optional[Path] = None
        self._closed = False
        if not persistent:
            _OPEN.add(self)
        try:
            self._create()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ set-up, teardown
    def _create(self) -> None:
        for ns in (self.switch, *self.namespaces):
            _ip_run(["ip", "netns", "add", ns])
            self._created.append(ns)
            _ip_run(["ip", "-n", ns, "link", "set", "lo", "up"])
        sw = ["ip", "-n", self.switch]
        _ip_run([*sw, "link", "add", "br0", "type", "bridge"])
        _ip_run([*sw, "link", "set", "br0", "up"])
        for i, ns in enumerate(self.namespaces):
            port = f"h{i}"
            _ip_run([*sw, "link", "add", port, "mtu", str(self.mtu), "type", "veth", "peer",
                     "name", "eth0", "netns", ns])
            _ip_run([*sw, "link", "set", port, "master", "br0"])
            _ip_run([*sw, "link", "set", port, "up"])
            _ip_run(["ip", "-n", ns, "addr", "add", f"{self.addresses[i]}/{SUBNET.prefixlen}",
                     "dev", "eth0"])
            _ip_run(["ip", "-n", ns, "link", "set", "eth0", "mtu", str(self.mtu), "up"])
            self._shape(self.switch, port)
            self._shape(ns, "eth0")
        if self.memory is not None:
            for i in range(self.num_hosts):
                self.cgroups.append(MemoryCgroup(f"{self.prefix}-h{i}", self.memory))
        self._write_state()

    def _shape(self, ns: str, dev: str) -> None:
        """Rate limit (tbf) and delay (netem) on the egress of ``dev`` in namespace ``ns``."""
        if self.rate is None and self.delay is None:
            return
        tc = ["tc", "-n", ns, "qdisc", "add", "dev", dev]
        parent = ["root"]
        if self.delay is not None:
            try:
                _ip_run([*tc, "root", "handle", "1:", "netem", "delay", self.delay,
                         "limit", "100000"])
            except RuntimeError as e:
                raise RuntimeError(f"NetnsHosts: delay={self.delay!r} needs the kernel's "
                                   f"netem qdisc (CONFIG_NET_SCH_NETEM), which failed here: "
                                   f"{e}") from None
            parent = ["parent", "1:1"]
        if self.rate is not None:
            # Burst: at least a few GSO super-packets (veths hand 64 KiB segments to the qdisc;
            # a smaller bucket drops them all), else 5 ms of traffic.
            burst = max(256 * 1024, int(rate_bits(self.rate) / 8 * 0.005))
            _ip_run([*tc, *parent, "handle", "2:", "tbf", "rate", self.rate,
                     "burst", str(burst), "latency", "100ms"])

    def _write_state(self) -> None:
        from pyg_sar.files import atomic_write
        try:
            atomic_write(_STATE_DIR / f"{self.prefix}.json", json.dumps(self.state()))
        except OSError:
            pass  # the state file only helps `down`; the namespaces' names suffice

    def state(self) -> dict:
        """What a program in the namespaces needs to know (JSON-able)."""
        return {"prefix": self.prefix, "switch": self.switch, "namespaces": self.namespaces,
                "hostnames": self.hostnames, "addresses": self.addresses,
                "rate": self.rate, "delay": self.delay, "mtu": self.mtu,
                "memory": self.memory,
                "cgroups": [str(cg.path) for cg in self.cgroups] or None}

    def close(self) -> None:
        """Kill what still runs in the namespaces, then delete them (idempotent)."""
        if self._closed:
            return
        self._closed = True
        _OPEN.discard(self)
        _remove_namespaces(list(self._created))
        self._created.clear()
        for cg in self.cgroups:  # kills what is left in them (e.g. a witness's own session)
            cg.close()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
        try:
            (_STATE_DIR / f"{self.prefix}.json").unlink()
        except OSError:
            pass

    def __enter__(self) -> NetnsHosts:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------------ running
    def command(self, host: int, argv: Sequence[str]) -> list[str]:
        """``argv`` to run inside host ``host`` (its network namespace, and a UTS namespace
        with its hostname)."""
        self._check_host(host)
        return ["ip", "netns", "exec", self.namespaces[host], "unshare", "--uts", "sh", "-c",
                self._setup(host) + 'echo "$0" > /proc/sys/kernel/hostname && shift && '
                'exec "$@"', self.hostnames[host], "--", *argv]

    def _setup(self, host: int) -> str:
        """Shell commands (ending in ``&& ``) that a host's shell runs first: with a memory
        budget, join the host's cgroup. `ip netns exec` mounts a fresh /sys for the namespace
        (in a private mount namespace), which hides the cgroup file systems: they are mounted
        again there, so the shell can join and the ranks can read their limit. (`ip netns
        exec` and `unshare` exec without forking: the shell is the process started, and
        everything it runs inherits its cgroup.)"""
        if not self.cgroups:
            return ""
        cg = self.cgroups[host]
        if cg.version == 2:
            mount = "mount -t cgroup2 cgroup2 /sys/fs/cgroup"
        else:
            mount = ("mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup && "
                     "mkdir -p /sys/fs/cgroup/memory && "
                     "mount -t cgroup -o memory cgroup /sys/fs/cgroup/memory")
        return f"{mount} && echo $$ > {cg.procs_file} && "

    def popen(self, host: int, argv: Sequence[str], **kwargs) -> subprocess.Popen:
        """Start ``argv`` in host ``host`` (``subprocess.Popen`` keyword arguments pass on)."""
        return subprocess.Popen(self.command(host, argv), **kwargs)

    def run(self, host: int, argv: Sequence[str], timeout: float = 60.0,
            **kwargs) -> subprocess.CompletedProcess:
        """Run ``argv`` in host ``host`` to completion (``timeout`` is a hang detector)."""
        return subprocess.run(self.command(host, argv), timeout=timeout, **kwargs)

    def launcher_script(self) -> str:
        """Path of an executable for ``mpiexec -launcher ssh -launcher-exec PATH``: it starts
        Hydra's proxy for a host address (or hostname) inside that host's namespaces."""
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix=f"{self.prefix}-"))
        path = self._tmp / "netns-launch"
        if not path.exists():
            cases = "\n".join(
                f"  {addr}|{name}) ns={ns}; name={name}; setup='{self._setup(i)}';;"
                for i, (addr, name, ns) in enumerate(zip(self.addresses, self.hostnames,
                                                         self.namespaces)))
            path.write_text(_LAUNCH_SCRIPT % {"cases": cases})
            path.chmod(0o755)
        return str(path)

    def torchrun_command(self, host: int, argv: Sequence[str], *, nproc_per_host: int = 1,
                         port: int = 29500) -> list[str]:
        """``torchrun`` for host ``host`` of a job over all hosts (``--nnodes``, one agent per
        host, static rendezvous on host 0's address); ``argv`` follows torchrun's options,
        e.g. ``["-m", "pyg_sar.train", ...]``."""
        return self.command(host, [
            sys.executable, "-m", "torch.distributed.run", "--nnodes", str(self.num_hosts),
            "--nproc-per-node", str(nproc_per_host), "--node-rank", str(host),
            "--master-addr", self.addresses[0], "--master-port", str(port), *argv])

    def mpiexec_command(self, argv: Sequence[str], *, ranks_per_host: int = 1,
                        mpiexec: Optional[str] = None) -> list[str]:
        """MPICH's ``mpiexec`` (Hydra), run in host 0, starting ``ranks_per_host`` ranks of
        ``argv`` in every host through :meth:`launcher_script`. Run it with :data:`MPI_ENV`
        in the environment."""
        if mpiexec is None:
            from pyg_sar.testing.launcher import find_mpiexec
            mpiexec = find_mpiexec()
            if mpiexec is None:
                raise RuntimeError("NetnsHosts.mpiexec_command: no mpiexec found")
        return self.command(0, [
            mpiexec, "-launcher", "ssh", "-launcher-exec", self.launcher_script(),
            "-hosts", ",".join(self.addresses), "-ppn", str(ranks_per_host),
            "-n", str(ranks_per_host * self.num_hosts), *argv])

    def _check_host(self, host: int) -> None:
        if not isinstance(host, int) or not 0 <= host < self.num_hosts:
            raise ValueError(f"NetnsHosts: host must be in [0, {self.num_hosts}) (got {host!r})")
        if self._closed:
            raise RuntimeError("NetnsHosts: the hosts were already removed (close())")

    # ----------------------------------------------------------------------- counters
    def link_bytes(self) -> list[dict[str, int]]:
        """Bytes that crossed each host's link so far, from the switch port's counters:
        ``[{"to_host": ..., "from_host": ...}, ...]`` in host order (frames incl. headers)."""
        out = _ip_run(["ip", "-n", self.switch, "-j", "-s", "link", "show"]).stdout
        ports = {d["ifname"]: d["stats64"] for d in json.loads(out)}
        return [{"to_host": int(ports[f"h{i}"]["tx"]["bytes"]),
                 "from_host": int(ports[f"h{i}"]["rx"]["bytes"])}
                for i in range(self.num_hosts)]

    def memory_cgroup(self, host: int) -> MemoryCgroup:
        """Host ``host``'s memory cgroup (only with ``memory=``)."""
        self._check_host(host)
        if not self.cgroups:
            raise RuntimeError("NetnsHosts: the hosts have no memory limit (memory=None)")
        return self.cgroups[host]

    def memory_peak(self, host: int) -> int:
        """Host ``host``'s memory high-water mark in bytes: every process it ran, together,
        **including page cache** charged to its cgroup (a process's own peak is its VmHWM)."""
        return self.memory_cgroup(host).peak()

    def oom_kills(self, host: int) -> int:
        """How many processes the kernel's OOM killer ended on host ``host``."""
        return self.memory_cgroup(host).oom_kills()

    def set_link(self, host: int, up: bool) -> None:
        """Cut (``up=False``) or restore host ``host``'s link (its switch port)."""
        self._check_host(host)
        _ip_run(["ip", "-n", self.switch, "link", "set", f"h{host}", "up" if up else "down"])


def run_commands(commands: Sequence[Sequence[str]], logs: Sequence[Path], *,
                 env: Optional[dict] = None, timeout: float = 300.0) -> list[int]:
    """Run ``commands`` side by side (e.g. one ``torchrun`` per host), each writing stdout and
    stderr to its log; return their exit codes once all have ended.

    Raises:
        TimeoutError: they had not all ended after ``timeout`` seconds (a hang detector);
            every one is killed and the message shows the tail of each log.
    """
    procs = []
    try:
        for cmd, log in zip(commands, logs):
            with open(log, "wb") as out:
                procs.append(subprocess.Popen(list(cmd), stdout=out, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, env=env,
                                              start_new_session=True))
        deadline = time.monotonic() + timeout
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(0.1)
        if any(p.poll() is None for p in procs):
            tails = "\n".join(f"--- {log}:\n{_tail(Path(log))}" for log in logs)
            raise TimeoutError(f"pyg_sar.testing.netns: the commands did not end within "
                               f"{timeout:.0f} s (killed):\n{tails}")
        return [p.returncode for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    p.kill()
                p.wait(timeout=30)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").rstrip().splitlines()[-lines:])
    except OSError:
        return "(no output)"


def run_on_hosts(target: str, hosts: NetnsHosts, *, ranks_per_host: int = 1,
                 launcher: str = "mpiexec", kwargs: Optional[dict] = None,
                 backend: Optional[str] = None, timeout: float = 300.0,
                 env: Optional[dict] = None) -> list:
    """:func:`pyg_sar.testing.run_on_ranks` with the ranks on namespace hosts: ``fn(ctx,
    **kwargs)`` on ``ranks_per_host`` ranks of every host, started by ``mpiexec`` (Hydra,
    from host 0) or ``torchrun`` (one agent per host, rendezvous on host 0's address).
    Returns the per-rank results; raises :class:`~pyg_sar.testing.RankFailure` (naming the
    failing rank) or :class:`~pyg_sar.testing.RankTimeout` as ``run_on_ranks`` does."""
    from pyg_sar.testing import launcher as launch
    if launcher not in ("mpiexec", "torchrun"):
        raise ValueError(f"run_on_hosts: launcher must be 'mpiexec' or 'torchrun' "
                         f"(got {launcher!r})")
    world = ranks_per_host * hosts.num_hosts
    work = Path(tempfile.mkdtemp(prefix="pyg_sar_hosts_"))
    try:
        (work / "kwargs.json").write_text(json.dumps(kwargs or {}))
        worker = ["-m", "pyg_sar.testing.worker", "--target", target, "--out-dir", str(work)]
        if backend is not None:
            worker += ["--backend", backend]
        base = launch._base_env(env)
        if launcher == "mpiexec":
            cmds = [hosts.mpiexec_command([sys.executable, *worker],
                                          ranks_per_host=ranks_per_host)]
            base = {**MPI_ENV, **base}
        else:
            cmds = [hosts.torchrun_command(h, worker, nproc_per_host=ranks_per_host)
                    for h in range(hosts.num_hosts)]
        logs = [work / f"launcher{i}.log" for i in range(len(cmds))]
        try:
            codes: list = run_commands(cmds, logs, env=base, timeout=timeout)
            timed_out = False
        except TimeoutError:
            codes, timed_out = [None] * len(cmds), True
        with open(work / "launcher.log", "wb") as merged:  # what _collect shows
            for log in logs:
                merged.write(log.read_bytes() if log.exists() else b"")
        return launch._collect(work, target, world, f"{launcher} on {hosts.num_hosts} "
                               f"namespace hosts", backend, timeout, timed_out, codes)
    finally:
        shutil.rmtree(work, ignore_errors=True)



def _netns_pids(ns: str) -> list[int]:
    """The pids of every process inside the network namespace ``ns``."""
    out = _ip_run(["ip", "netns", "pids", ns], check=False)
    return [int(p) for p in out.stdout.split() if p.strip().isdigit()]


def _remove_namespaces(names: list[str]) -> None:
    """Kill every process inside the namespaces ``names`` (all of them were started there by
    this harness), then delete the namespaces (their veths and bridge go with them)."""
    for ns in names:
        kill_until_empty(functools.partial(_netns_pids, ns), tries=50)
    for ns in names:
        _ip_run(["ip", "netns", "del", ns], check=False)


def _ours() -> list[str]:
    out = _ip_run(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines()
            if line.strip() and line.split()[0].startswith(NAME_PREFIX + "-")]


def remove_stale() -> list[str]:
    """Remove namespaces this harness created in processes that no longer run; returns their
    names."""
    stale = []
    for ns in _ours():
        parts = ns.split("-")
        if len(parts) >= 3 and parts[1].isdigit() and int(parts[1]) != 0 and \
                not _pid_alive(int(parts[1])):
            stale.append(ns)
    _remove_namespaces(stale)
    for f in _STATE_DIR.glob(f"{NAME_PREFIX}-*.json") if _STATE_DIR.exists() else []:
        parts = f.stem.split("-")
        if len(parts) >= 3 and parts[1].isdigit() and int(parts[1]) != 0 and \
                not _pid_alive(int(parts[1])):
            f.unlink(missing_ok=True)
    return stale


# ---------------------------------------------------------------------------- command line
def _main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pyg_sar.testing.netns",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check", help="say whether namespace hosts can be made here")
    for name in ("up", "run"):
        p = sub.add_parser(name, help="create hosts" + (" and run a command" if name == "run"
                                                         else " and keep them"))
        p.add_argument("--hosts", type=int, default=2)
        p.add_argument("--rate", default=None, help="per-link rate, e.g. 100mbit, 1gbit")
        p.add_argument("--delay", default=None, help="per-link one-way delay, e.g. 1ms")
        if name == "run":
            p.add_argument("argv", nargs=argparse.REMAINDER, help="-- CMD ...")
    down = sub.add_parser("down", help="remove hosts")
    down.add_argument("--prefix", default=None, help="the prefix printed by 'up'")
    down.add_argument("--stale", action="store_true",
                      help="remove what runs whose process is gone left behind")
    args = parser.parse_args(argv)
    if args.cmd == "check":
        reason = unavailable_reason()
        print("ok" if reason is None else f"unavailable: {reason}")
        return 0 if reason is None else 1
    if args.cmd == "down":
        if args.stale:
            print(json.dumps({"removed": remove_stale()}))
            return 0
        if not args.prefix or not args.prefix.startswith(NAME_PREFIX + "-"):
            parser.error("down needs --prefix pyg_sar-... (from 'up') or --stale")
        names = [ns for ns in _ours() if ns.startswith(args.prefix + "-")]
        _remove_namespaces(names)
        (_STATE_DIR / f"{args.prefix}.json").unlink(missing_ok=True)
        print(json.dumps({"removed": names}))
        return 0
    hosts = NetnsHosts(args.hosts, rate=args.rate, delay=args.delay,
                       persistent=args.cmd == "up")
    if args.cmd == "up":
        print(json.dumps(hosts.state(), indent=1))
        return 0
    with hosts:
        cmd = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        if not cmd:
            parser.error("run needs a command after --")
        env = dict(os.environ, PYG_SAR_NETNS=json.dumps(hosts.state()))
        return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(_main())
