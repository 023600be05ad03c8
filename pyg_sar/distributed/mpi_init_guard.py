"""The deadline of MPI_Init under failure supervision (run as a script by
:func:`pyg_sar.distributed.join.import_mpi_with_deadline`; standard library only, started with
``python -I -S``).

``python mpi_init_guard.py FD SECONDS PID RANK SIZE LOCAL KEY MESSAGE``: wait until the pipe
``FD`` closes (the rank's MPI_Init returned) or ``SECONDS`` pass; then print MESSAGE with the
ranks found waiting and SIGKILL process ``PID`` (MPI_Init holds the GIL: nothing inside the rank
can time it out). While it waits, each guard holds an abstract Unix socket named after the
launch (KEY) and its rank, so the one that fires names the ranks that never arrived when every
rank shares the host (LOCAL == SIZE).
"""
import os
import select
import signal
import socket
import sys
import time


def _name(key: str, rank: int) -> str:
    return f"\0pyg_sar-mpi-init-{key}-{rank}"


def _listed(key: str) -> set:
    """The ranks whose guard holds its marker now (no connection needed)."""
    found, prefix = set(), "@" + _name(key, 0)[1:-1]
    try:
        with open("/proc/net/unix") as f:
            for line in f:
                path = line.split()[-1]
                if path.startswith(prefix) and path[len(prefix):].isdigit():
                    found.add(int(path[len(prefix):]))
    except OSError:
        pass
    return found


def main(argv: list) -> None:
    fd, seconds, pid, rank, size, local = (int(argv[1]), float(argv[2]), int(argv[3]),
                                           int(argv[4]), int(argv[5]), int(argv[6]))
    key, message = argv[7], argv[8]
    marker = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        marker.bind(_name(key, rank))
        marker.listen(64)
    except OSError:
        marker = None
    ready, _, _ = select.select([fd], [], [], seconds)
    if ready:
        return
    waiting = []
    for r in range(size):
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(_name(key, r))
            waiting.append(r)
            probe.sendall(f"{rank}\n".encode())  # tells guard r that this one has looked
        except OSError:
            pass
        finally:
            probe.close()
    if marker is not None and local == size:  # every rank runs on this host
        missing = sorted(set(range(size)) - set(waiting))
        who = (f"rank(s) {missing} of {size} never started MPI (not started, or crashed "
               f"before pyg_sar.init)")
    else:
        who = (f"ranks waiting on this host: {waiting}; a rank on another host has not "
               f"started MPI")
    sys.stderr.write(message + ": " + who + "\n")
    sys.stderr.flush()
    os.kill(pid, signal.SIGKILL)
    # Keep the marker until every other waiting guard has looked at it (a guard that fires
    # looks first) or is gone (its rank ended): none of them may count this rank as missing.
    # The deadline is a hang detector only.
    others, deadline = set(waiting) - {rank}, time.monotonic() + 60
    if marker is not None:
        marker.settimeout(0.05)
    while marker is not None and others and time.monotonic() < deadline:
        try:
            conn, _ = marker.accept()
            with conn:
                conn.settimeout(1.0)
                others.discard(int(conn.recv(16) or b"-1"))
        except (OSError, ValueError):
            pass
        others &= _listed(key)


if __name__ == "__main__":
    main(sys.argv)
