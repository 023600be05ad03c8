"""Rank 0's progress: a tqdm bar when its output reaches a terminal (alone, or under mpiexec or
torchrun), log lines otherwise. The decision is tested on a fake /proc tree; the launchers run
under a pseudo-terminal (os.openpty)."""
from __future__ import annotations

import fcntl
import io
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from pyg_sar.distributed.terminal import launcher_terminal, terminal_columns, writes_to_terminal
from pyg_sar.testing import find_mpiexec
from pyg_sar.train import parse_args
from pyg_sar.train_node import use_progress_bar

ROOT = Path(__file__).resolve().parents[2]
HANG_S = 300  # hang detector only
COLUMNS = 72


# ----------------------------------------------------------------- the decision, unit tests
def _fake_proc(root: Path, chain: list[tuple[int, str, dict[int, str]]]) -> Path:
    """A /proc with one process per entry (pid, name, fd -> link target); each entry is the
    parent of the one before it."""
    for i, (pid, name, fds) in enumerate(chain):
        parent = chain[i + 1][0] if i + 1 < len(chain) else 1
        d = root / str(pid)
        (d / "fd").mkdir(parents=True)
        (d / "comm").write_text(name + "\n")
        (d / "stat").write_text(f"{pid} ({name}) S {parent} {pid} {pid} 0 -1\n")
        for fd, target in fds.items():
            os.symlink(target, d / "fd" / str(fd))
    return root


def test_launcher_terminal_follows_proxies_to_the_launcher_only(tmp_path):
    rank = (100, "python", {1: "pipe:[11]", 2: "pipe:[12]"})
    proxy = (90, "hydra_pmi_proxy", {1: "pipe:[21]", 2: "pipe:[21]"})
    tty_mpiexec = (80, "mpiexec", {1: "/dev/pts/3", 2: "pipe:[31]"})
    shell = (70, "bash", {1: "/dev/pts/3", 2: "/dev/pts/3"})
    proc = _fake_proc(tmp_path / "a", [rank, proxy, tty_mpiexec, shell])
    assert launcher_terminal(1, pid=100, proc=proc) == proc / "80" / "fd" / "1"
    assert launcher_terminal(2, pid=100, proc=proc) is None  # its stderr goes to a pipe

    # mpiexec read through a pipe by a harness that itself is on a terminal: not a terminal.
    piped = (80, "mpiexec", {1: "pipe:[41]", 2: "pipe:[42]"})
    proc = _fake_proc(tmp_path / "b", [rank, proxy, piped, shell])
    assert launcher_terminal(1, pid=100, proc=proc) is None

    # No launcher (the parent is a shell), Open MPI's chain, a name with spaces and brackets.
    proc = _fake_proc(tmp_path / "c", [rank, shell])
    assert launcher_terminal(1, pid=100, proc=proc) is None
    proc = _fake_proc(tmp_path / "d", [(7, "py (x) y", {}), (6, "orted", {}),
                                       (5, "mpirun", {2: "/dev/tty1"})])
    assert launcher_terminal(2, pid=7, proc=proc) == proc / "5" / "fd" / "2"
    proc = _fake_proc(tmp_path / "e", [rank, proxy, (80, "mpiexec", {1: "/dev/null"})])
    assert launcher_terminal(1, pid=100, proc=proc) is None
    assert launcher_terminal(1, pid=12345, proc=tmp_path / "e") is None  # no such process


def test_use_progress_bar_decision():
    master, slave = os.openpty()
    r, w = os.pipe()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, COLUMNS, 0, 0))
        with open(slave, "w", closefd=False) as tty, open(w, "w", closefd=False) as pipe:
            assert writes_to_terminal(tty) and terminal_columns(tty) == COLUMNS
            # A pipe on an fd that is not this process's stdout/stderr: never a terminal.
            assert not writes_to_terminal(pipe) and terminal_columns(pipe) is None
            assert not writes_to_terminal(io.StringIO())
            assert use_progress_bar("auto", True, tty)
            assert not use_progress_bar("auto", True, pipe)
            assert not use_progress_bar("auto", False, tty)  # only rank 0 reports
            assert use_progress_bar("bar", True, pipe) and not use_progress_bar("bar", False, tty)
            assert not use_progress_bar("log", True, tty)
    finally:
        for fd in (master, slave, r, w):
            os.close(fd)
    with pytest.raises(ValueError, match="progress must be one of"):
        use_progress_bar("fancy", True)
    assert parse_args([]).progress == "auto"
    with pytest.raises(SystemExit):
        parse_args(["--progress", "fancy"])


# ------------------------------------------------------------ launchers on a pseudo-terminal
def _env() -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))


def _train(tmp_path: Path) -> list[str]:
    return [sys.executable, "-m", "pyg_sar.train", "--dataset", "cora", "--method", "random",
            "--parts-dir", str(tmp_path / "parts"), "--epochs", "5", "--log-every", "1"]


def _run_on_pty(cmd: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``cmd`` with a pseudo-terminal of COLUMNS columns as its stdin/stdout/stderr (as
    from an interactive shell); returns its exit status and everything it wrote."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, COLUMNS, 0, 0))
    proc = subprocess.Popen(cmd, cwd=cwd, env=_env(), stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + HANG_S
    try:
        while True:
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                raise AssertionError(f"{cmd} did not end within {HANG_S} s:\n"
                                     f"{b''.join(chunks).decode(errors='replace')}")
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal has closed it
                break
            if not data:
                break
            chunks.append(data)
        status = proc.wait(timeout=HANG_S)
    finally:
        os.close(master)
    return status, b"".join(chunks).decode(errors="replace")


def _screen_lines(text: str) -> list[str]:
    """What was drawn: every carriage-return-separated piece of every line."""
    return [piece for line in text.replace("\r\n", "\n").split("\n")
            for piece in line.split("\r") if piece]


def _assert_bar(status: int, text: str) -> None:
    assert status == 0, text[-3000:]
    drawn = _screen_lines(text)
    bars = [p for p in drawn if p.startswith("epochs:")]
    assert any(p.startswith("epochs: 100%|") and "5/5" in p for p in bars), text[-3000:]
    assert all(len(p) <= COLUMNS for p in bars), bars  # sized to the launcher's terminal
    assert not any(p.startswith("epoch    1/5") for p in drawn), text[-3000:]
    assert sum(p.startswith("final test accuracy") for p in drawn) == 1, text[-3000:]


@pytest.mark.skipif(find_mpiexec() is None, reason="needs mpiexec (the mpich wheel)")
def test_bar_under_mpiexec_on_a_terminal_and_log_lines_through_a_pipe(tmp_path):
    cmd = [find_mpiexec(), "-n", "2", *_train(tmp_path)]
    _assert_bar(*_run_on_pty(cmd, tmp_path))

    piped = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True,
                           timeout=HANG_S)
    assert piped.returncode == 0, piped.stderr[-3000:]
    assert all(f"epoch {e:4d}/5" in piped.stdout for e in range(1, 6)), piped.stdout
    assert "%|" not in piped.stdout + piped.stderr


def test_bar_under_torchrun_on_a_terminal(tmp_path):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
           "--nproc-per-node=2", *_train(tmp_path)[1:]]
    _assert_bar(*_run_on_pty(cmd, tmp_path))
