"""Faults across network-namespace hosts (issue 13, item 4): `python -m pyg_sar.train` on two
hosts loses one of them mid-training.

* A cut link (the host's switch port set down): every rank ends within the limit while the
  link is still down, and rank 0's error names the unreachable rank and its host (hostname and
  address). Under mpiexec, Hydra itself keeps waiting for its proxy on the cut host (its control
  connection cannot close while the link is down) and ends once the link is back; under
  torchrun each host's agent ends on its own, and rank 1 names rank 0 and host0 too.
* Every process of one host killed (SIGKILL to all of the namespace's processes): the job ends
  within the limit and nothing is left running.
* After the cut link is restored, `--resume` from the last checkpoint on the same hosts ends
  bit-identical (losses, accuracies, bytes, parameters, RNG state) to an uninterrupted run.
* A communication timeout shorter than the heartbeat deadline: the wait across the cut link
  times out first, and its diagnosis still names the silent rank and its host.

The fault lands at a known point: `train_paused.py` holds every rank right after the checkpoint
of epoch PAUSE is committed until the test, having injected the fault, writes the `go` file.
Failure detection is shortened through the watchdog's environment (heartbeat 1 s, a peer silent
for 8 s is lost, 10 s grace), far below the default 120 s communication timeout; LIMIT_S and
HANG_S are hang detectors only.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from pyg_sar.testing.launcher import has_mpi
from pyg_sar.testing.netns import NetnsHosts, run_commands
from tests.netns.launch_env import SUPERVISION
from tests.netns.launch_env import launch_env as _env

PAUSED = str(Path(__file__).with_name("train_paused.py"))
EPOCHS, PAUSE = 6, 2
TRAIN = ["--epochs", str(EPOCHS), "--dtype", "float64", "--hidden", "16", "--progress", "log",
         "--log-every", "1", "--eval-every", "1", "--checkpoint-every", str(PAUSE)]
LIMIT_S = 60.0  # from the fault to the end of every rank (detection 8 s + grace 10 s)
HANG_S = 240.0  # a whole launch on the loaded 2-core machine

needs_mpi = pytest.mark.skipif(not has_mpi(), reason="needs mpiexec and mpi4py")
LAUNCHERS = [pytest.param("mpiexec", marks=needs_mpi), "torchrun"]


def _commands(hosts: NetnsHosts, launcher: str, argv: list[str], port: int) -> list[list[str]]:
    """``argv`` (a script or ``-m module`` and its arguments) on one rank per host."""
    if launcher == "mpiexec":
        return [hosts.mpiexec_command([sys.executable, *argv])]
    return [hosts.torchrun_command(h, argv, port=port) for h in range(hosts.num_hosts)]


def _logs_text(logs: list[Path]) -> str:
    return "\n".join(f"--- {p.name}:\n{p.read_text(errors='replace')[-4000:]}" for p in logs)


def _processes(hosts: NetnsHosts) -> list[list[tuple[int, str]]]:
    """(pid, command name) of every process in each host's namespace."""
    found = []
    for ns in hosts.namespaces:
        out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True,
                             timeout=30).stdout
        procs = []
        for pid in (int(p) for p in out.split() if p.isdigit()):
            try:
                procs.append((pid, Path(f"/proc/{pid}/comm").read_text().strip()))
            except OSError:
                continue  # ended meanwhile
        found.append(procs)
    return found


def _until(condition, seconds: float, what: str, logs: list[Path]) -> float:
    """Poll ``condition`` until true; returns the seconds it took. ``seconds``: hang detector."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > seconds:
            pytest.fail(f"{what}: not within {seconds:.0f} s\n{_logs_text(logs)}")
        time.sleep(0.05)
    return time.monotonic() - start


def _latest_epoch(ck: Path) -> int:
    return json.loads((ck / "latest.json").read_text())["epoch"]


def _final_params(ck: Path) -> list[dict]:
    latest = json.loads((ck / "latest.json").read_text())
    assert latest["epoch"] == EPOCHS
    return [torch.load(ck / latest["snapshot"] / f"rank{r}.pt", weights_only=True)
            for r in range(2)]


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    import pyg_sar
    from pyg_sar.datasets import cora
    out = tmp_path_factory.mktemp("faults") / "cora-2"
    pyg_sar.partition_graph(cora(), 2, out)
    return out


@pytest.fixture(scope="module")
def reference(parts, tmp_path_factory):
    """The uninterrupted run on two hosts (mpiexec when it is there, else torchrun): metrics
    and final checkpoint. Gloo and MPI runs are equal bit for bit (test_netns_training)."""
    tmp = tmp_path_factory.mktemp("reference")
    launcher = "mpiexec" if has_mpi() else "torchrun"
    argv = ["-m", "pyg_sar.train", *TRAIN, "--parts", str(parts), "--checkpoint",
            str(tmp / "ck"), "--metrics", str(tmp / "metrics.json")]
    with NetnsHosts(2) as hosts:
        cmds = _commands(hosts, launcher, argv, port=29500)
        logs = [tmp / f"ref{i}.log" for i in range(len(cmds))]
        codes = run_commands(cmds, logs, env=_env(), timeout=HANG_S)
    assert not any(codes), f"reference run failed {codes}:\n{_logs_text(logs)}"
    return json.loads((tmp / "metrics.json").read_text()), _final_params(tmp / "ck")


class _PausedJob:
    """The job to break, started on ``hosts``: by default training held after the checkpoint
    of epoch PAUSE (``train_paused.py``); ``script`` (given the markers folder) replaces it."""

    def __init__(self, hosts: NetnsHosts, launcher: str, parts: Path, tmp: Path,
                 script=None, env=None) -> None:
        self.hosts, self.launcher, self.tmp = hosts, launcher, tmp
        self.ck, self.markers = tmp / "ck", tmp / "markers"
        self.markers.mkdir()
        argv = [PAUSED, str(PAUSE), str(self.markers), *TRAIN, "--parts", str(parts),
                "--checkpoint", str(self.ck)] if script is None else script(self.markers)
        self.trains = script is None
        cmds = _commands(hosts, launcher, argv, port=29500)
        self.logs = [tmp / f"{launcher}{i}.log" for i in range(len(cmds))]
        self.procs = []
        for cmd, log in zip(cmds, self.logs):
            with open(log, "wb") as out:
                self.procs.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                                   stdin=subprocess.DEVNULL,
                                                   env=_env() if env is None else env,
                                                   start_new_session=True))

    def wait_paused(self) -> None:
        def paused():
            ended = [p.returncode for p in self.procs if p.poll() is not None]
            if ended:
                pytest.fail(f"the job ended ({ended}) before the pause:\n"
                            f"{_logs_text(self.logs)}")
            return all((self.markers / f"rank{r}").exists() for r in range(2))
        _until(paused, HANG_S, "both ranks paused", self.logs)
        if self.trains:
            assert _latest_epoch(self.ck) == PAUSE

    def go(self) -> None:
        (self.markers / "go").write_text("")

    def ended(self) -> bool:
        return all(p.poll() is not None for p in self.procs)

    def kill(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=30)


def _names(rank: int, host: int, hosts: NetnsHosts) -> str:
    """How a rank's failure names it and its host (regex)."""
    return (rf"rank {rank} \(host {hosts.hostnames[host]}, "
            rf"{re.escape(hosts.addresses[host])}\)")


def _resume(hosts: NetnsHosts, launcher: str, parts: Path, ck: Path, tmp: Path) -> dict:
    metrics = tmp / "resumed.json"
    argv = ["-m", "pyg_sar.train", *TRAIN, "--parts", str(parts), "--checkpoint", str(ck),
            "--resume", "--metrics", str(metrics)]
    cmds = _commands(hosts, launcher, argv, port=29501)  # the first run's port may linger
    logs = [tmp / f"resume{i}.log" for i in range(len(cmds))]
    codes = run_commands(cmds, logs, env=_env(), timeout=HANG_S)
    assert not any(codes), f"resume failed {codes}:\n{_logs_text(logs)}"
    assert f"after epoch {PAUSE}" in logs[0].read_text()
    return json.loads(metrics.read_text())


def _assert_bit_identical(got: dict, ck: Path, reference) -> None:
    want, want_params = reference
    for key in ("loss", "train_acc", "val_acc", "bytes_sent"):
        assert [h[key] for h in got["history"]] == [h[key] for h in want["history"]], key
    assert len(got["history"]) == EPOCHS
    assert got["final_test_acc"] == want["final_test_acc"]
    assert got["best_val_acc"] == want["best_val_acc"]
    for a, b in zip(_final_params(ck), want_params, strict=True):
        assert a["model"].keys() == b["model"].keys()
        for name in a["model"]:
            assert torch.equal(a["model"][name], b["model"][name]), name
        assert torch.equal(a["rng"]["torch"], b["rng"]["torch"])


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_cut_link_ends_job_naming_host_and_resume_is_bit_identical(launcher, parts, reference,
                                                                  tmp_path):
    with NetnsHosts(2) as hosts:
        job = _PausedJob(hosts, launcher, parts, tmp_path)
        try:
            job.wait_paused()
            hosts.set_link(1, False)
            job.go()  # the next epoch's communication crosses the cut link

            # Every rank ends while the link is down. Hydra's mpiexec (host 0) still waits for
            # its proxy on host 1, which it cannot hear from until the link is back.
            launcher_left = {"mpiexec"} if launcher == "mpiexec" else set()

            def ranks_ended():
                left = [name for procs in _processes(hosts) for _, name in procs]
                return set(left) <= launcher_left and (launcher == "mpiexec" or job.ended())
            took = _until(ranks_ended, LIMIT_S, "every rank ended after the cut", job.logs)
            host0_log = job.logs[0].read_text(errors="replace")
            assert re.search(rf"pyg_sar: rank 0 stops: {_names(1, 1, hosts)} failed in .+: "
                             rf"no heartbeat for \d+ s", host0_log), _logs_text(job.logs)
            if launcher == "torchrun":  # host 1's output is local to it too
                host1_log = job.logs[1].read_text(errors="replace")
                assert re.search(rf"pyg_sar: rank 1 stops: {_names(0, 0, hosts)} failed in "
                                 rf".+: no heartbeat", host1_log), _logs_text(job.logs)

            hosts.set_link(1, True)
            _until(job.ended, LIMIT_S, "the launchers ended after the link came back",
                   job.logs)
            assert all(p.returncode != 0 for p in job.procs), [p.returncode for p in job.procs]
            assert _processes(hosts) == [[], []]
        finally:
            job.kill()
        print(f"{launcher}: every rank ended {took:.1f} s after the cut")
        assert _latest_epoch(job.ck) == PAUSE  # nothing after the pause was committed
        got = _resume(hosts, launcher, parts, job.ck, tmp_path)
    _assert_bit_identical(got, job.ck, reference)


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_killed_host_ends_job(launcher, parts, tmp_path):
    with NetnsHosts(2) as hosts:
        job = _PausedJob(hosts, launcher, parts, tmp_path)
        try:
            job.wait_paused()
            victims = _processes(hosts)[1]
            assert victims  # the rank, its witness, and the launcher's agent or proxy
            while victims:  # a host's crash: every process of it at once, none forking on
                for pid, _ in victims:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                victims = _processes(hosts)[1]
            job.go()

            took = _until(lambda: job.ended() and _processes(hosts) == [[], []], LIMIT_S,
                          "the job ended after host 1 was killed", job.logs)
            codes = [p.returncode for p in job.procs]
        finally:
            job.kill()
    print(f"{launcher}: the job ended {took:.1f} s after host 1 was killed")
    assert codes[0] != 0, codes
    text = job.logs[0].read_text(errors="replace")
    if launcher == "torchrun":
        assert re.search(rf"pyg_sar: rank 0 stops: {_names(1, 1, hosts)} failed in .+: its "
                         rf"process exited or was killed", text), _logs_text(job.logs)
    else:
        # Hydra ends the job the moment it loses the proxy of host 1, and says so; rank 0's own
        # line races that teardown (its output goes through Hydra), so only Hydra's is certain.
        assert "[mpiexec@host0]" in text and "assert (!closed) failed" in text, \
            _logs_text(job.logs)


@needs_mpi
def test_cut_link_named_when_the_timeout_comes_before_the_heartbeat_deadline(tmp_path):
    """A communication timeout (12 s) shorter than the watchdog's heartbeat deadline (the
    default 45 s): the wait across the cut link times out first, and the timeout's diagnosis
    names the silent rank and its host (no heartbeat for SILENT_BEATS beats)."""
    from pyg_sar.distributed import hub
    job_script = str(Path(__file__).with_name("timeout_job.py"))
    env = {k: v for k, v in _env().items() if k not in SUPERVISION}  # the default deadlines
    with NetnsHosts(2) as hosts:
        job = _PausedJob(hosts, "mpiexec", Path(), tmp_path, env=env,
                         script=lambda markers: [job_script, str(markers), "12"])
        try:
            job.wait_paused()
            hosts.set_link(1, False)
            job.go()
            took = _until(lambda: {name for procs in _processes(hosts) for _, name in procs}
                          <= {"mpiexec"}, LIMIT_S, "every rank ended after the cut", job.logs)
            assert took < hub.DEAD_AFTER_S  # named by the timeout, not the deadline
            assert re.search(rf"pyg_sar: rank 0 stops: {_names(1, 1, hosts)} failed in "
                             rf".+: no heartbeat for \d+ s \(unreachable",
                             job.logs[0].read_text(errors="replace")), _logs_text(job.logs)
            hosts.set_link(1, True)
            _until(job.ended, LIMIT_S, "mpiexec ended after the link came back", job.logs)
            assert job.procs[0].returncode != 0
            assert _processes(hosts) == [[], []]
        finally:
            job.kill()
    print(f"mpiexec, 12 s timeout: every rank ended {took:.1f} s after the cut")
