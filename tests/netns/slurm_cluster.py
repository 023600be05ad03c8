"""A real Slurm cluster on network-namespace hosts, for tests (root and Debian's ``slurm-wlm`` +
``munge``): ``slurmctld`` in host 0, one ``slurmd`` per host, one ``munged`` (in host 0; its
socket is a file, which every namespace reaches). Everything lives under one temporary folder;
every daemon is killed at exit, also on failure (the namespaces' processes are killed with them).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from pyg_sar.testing.netns import NetnsHosts

PROGRAMS = ("slurmctld", "slurmd", "munged", "mungekey", "sbatch", "srun", "sinfo")


def unavailable_reason() -> Optional[str]:
    """Why a Slurm cluster cannot be brought up here, or ``None``."""
    if os.geteuid() != 0:
        return "a Slurm cluster on namespace hosts needs root"
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if missing:
        return (f"Slurm/munge programs missing: {', '.join(missing)} (apt-get install "
                f"slurm-wlm munge; .ci/setup_slurm does it as root)")
    return None


_CONF = """\
ClusterName=pygsar
SlurmctldHost={host0}({addr0})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={dir}/munge.socket
StateSaveLocation={dir}/ctld
SlurmdSpoolDir={dir}/spool/%n
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.%n.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.%n.log
TmpFS={dir}/tmp
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=pmi2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
InactiveLimit=0
KillWait=2
MessageTimeout=20
NodeName={nodes} NodeAddr={addrs} CPUs=1 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


class SlurmCluster:
    """``slurmctld`` + one ``slurmd`` per namespace host of ``hosts``; :meth:`env` is the
    environment for Slurm's client commands (run them in a host with ``hosts.command``)."""

    def __init__(self, hosts: NetnsHosts, dir: Optional[Path] = None) -> None:
        self.hosts = hosts
        self.dir = Path(dir or tempfile.mkdtemp(prefix="pyg_sar_slurm_"))
        self._own_dir = dir is None
        self.procs: list[subprocess.Popen] = []
        self._logs: list = []
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def env(self, **extra: str) -> dict:
        return dict(os.environ, SLURM_CONF=str(self.conf), **extra)

    def task_env(self, **extra: str) -> dict:
        """:meth:`env` for a Python task of a job: this interpreter's folder on ``PATH``, the
        repository on ``PYTHONPATH``, one thread, unbuffered, and no launcher variables of the
        test's own process (the task must take its ranks from Slurm)."""
        root = str(Path(__file__).resolve().parents[2])
        env = self.env(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1",
                       PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                       PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH"))
                                                  if p), **extra)
        for key in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
            env.pop(key, None)
        return env

    def _spawn(self, host: int, argv: list[str], log: str) -> None:
        out = open(self.dir / log, "wb")
        self._logs.append(out)
        self.procs.append(self.hosts.popen(host, argv, stdout=out, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL, start_new_session=True))

    def _start(self) -> None:
        d = self.dir
        for sub in ("ctld", "tmp", "munge", *(f"spool/{n}" for n in self.hosts.hostnames)):
            (d / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o755)
        os.chmod(d / "munge", 0o700)
        key = d / "munge" / "munge.key"
        subprocess.run(["mungekey", "-c", "-k", str(key)], check=True, capture_output=True)
        n = self.hosts.num_hosts
        self.conf = d / "slurm.conf"
        self.conf.write_text(_CONF.format(
            host0=self.hosts.hostnames[0], addr0=self.hosts.addresses[0], dir=d,
            nodes=f"host[0-{n - 1}]" if n > 1 else "host0",
            addrs=",".join(self.hosts.addresses)))
        self._spawn(0, ["munged", "-F", "-f", f"--socket={d}/munge.socket",
                        f"--key-file={key}", f"--pid-file={d}/munge/munged.pid",
                        f"--seed-file={d}/munge/seed", f"--log-file={d}/munge/munged.log"],
                    "munged.out")
        self._wait_for(lambda: (d / "munge.socket").exists(), "munged's socket", 10)
        self._spawn(0, ["slurmctld", "-D", "-i", "-f", str(self.conf)], "slurmctld.out")
        # `ip netns exec` mounts a fresh /sys without cgroup file systems, and slurmd's start
        # checks for one even with proctrack/linuxproc and task/none: an empty tmpfs will do
        # (cgroup.conf names v1, so it does not try to autodetect a version).
        (d / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\n")
        for i, name in enumerate(self.hosts.hostnames):
            self._spawn(i, ["sh", "-c", 'mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup && '
                            'exec slurmd -D -N "$0" -f "$1"', name, str(self.conf)],
                        f"slurmd.{i}.out")
        self._wait_for(self._nodes_idle, "every node idle in sinfo", 60)

    def _nodes_idle(self) -> bool:
        out = subprocess.run(self.hosts.command(0, ["sinfo", "-h", "-N", "-o", "%N %t"]),
                             env=self.env(), capture_output=True, text=True, timeout=30)
        states = dict(line.split() for line in out.stdout.splitlines() if line.strip())
        return len(states) == self.hosts.num_hosts and all(s == "idle" for s in states.values())

    def _wait_for(self, ready, what: str, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.procs):
                break
            if ready():
                return
            time.sleep(0.3)
        raise RuntimeError(f"SlurmCluster: no {what} within {seconds:.0f} s; logs:\n"
                           + self.logs())

    def logs(self, lines: int = 15) -> str:
        out = []
        for f in sorted(self.dir.glob("*.log")) + sorted(self.dir.glob("*.out")) + \
                sorted(self.dir.glob("munge/*.log")):
            text = f.read_text(errors="replace").rstrip().splitlines()[-lines:]
            out.append(f"--- {f.name}:\n" + "\n".join(text))
        return "\n".join(out)

    def close(self) -> None:
        """Kill every daemon (their sessions: slurmstepd and job processes go too)."""
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, 9)
                except (ProcessLookupError, PermissionError):
                    p.kill()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for f in self._logs:
            f.close()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> SlurmCluster:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
