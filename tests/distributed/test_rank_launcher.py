"""run_on_ranks reports a failing rank's error and kills a launch that hangs."""
import os
import re
import time

import pytest

from pyg_sar.testing import RankFailure, RankTimeout, has_mpi, run_on_ranks

HERE = os.path.abspath(__file__)


def raise_on_rank_1(ctx) -> int:
    if ctx.rank == 1:
        raise ValueError("deliberate failure 4711")
    ctx.comm.barrier()  # blocks on the dead rank until the launcher kills this one
    return ctx.rank


def hang(ctx, pid_dir: str) -> None:
    print(f"rank {ctx.rank} is hanging now", flush=True)
    path = os.path.join(pid_dir, f"{ctx.rank}.pid")  # once printed, whole or not at all
    with open(path + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(path + ".tmp", path)
    time.sleep(3600)


def return_rank(ctx) -> dict:
    return {"rank": ctx.rank, "world_size": ctx.world_size}


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not has_mpi(), reason="needs mpiexec and mpi4py")
def test_failing_rank_is_named_with_its_traceback():
    with pytest.raises(RankFailure) as info:
        run_on_ranks(f"{HERE}:raise_on_rank_1", 2, launcher="mpiexec", timeout=120)
    msg = str(info.value)
    assert msg.startswith("pyg_sar: rank 1 failed".replace("pyg_sar", "pyg_sar.testing"))
    assert "ValueError: deliberate failure 4711" in msg and "raise_on_rank_1" in msg
    # Rank 0 is either killed by the launcher first or stops on the watchdog's notice first.
    assert "rank 0: no result" in msg or re.search(r"rank 0: .*rank 1 failed", msg), msg


@pytest.mark.skipif(not has_mpi(), reason="needs mpiexec and mpi4py")
def test_hanging_launch_is_killed(tmp_path):
    """The launch is killed at its timeout, which must come after both ranks started hanging:
    on a machine too busy to start them in time the test runs again with twice the timeout
    (the timeout is what is tested, not how fast ranks start). It starts at 10 s: the whole
    timeout is waited for, and a busy machine costs one more try."""
    for timeout in (10, 20, 40, 80):
        pid_dir = tmp_path / f"timeout{timeout}"
        pid_dir.mkdir()
        start = time.monotonic()
        with pytest.raises(RankTimeout) as info:
            run_on_ranks(f"{HERE}:hang", 2, launcher="mpiexec", timeout=timeout,
                         kwargs={"pid_dir": str(pid_dir)})
        took = time.monotonic() - start
        pids = [int(p.read_text()) for p in pid_dir.glob("*.pid")]
        assert not any(_alive(pid) for pid in pids)
        if len(pids) == 2:
            break
    assert len(pids) == 2, "the ranks did not start within 80 s (machine overloaded?)"
    assert timeout <= took < timeout + 60  # killed at the timeout (the kill itself waits <= 20 s)
    msg = str(info.value)
    assert f"timed out after {timeout:.1f} s" in msg
    assert "rank 0 is hanging now" in msg and "rank 1 is hanging now" in msg


def test_spawn_results_and_bad_target():
    assert run_on_ranks(f"{HERE}:return_rank", 2, launcher="spawn") == [
        {"rank": 0, "world_size": 2}, {"rank": 1, "world_size": 2}]
    with pytest.raises(RankFailure, match="no function 'missing'"):
        run_on_ranks(f"{HERE}:missing", 1, launcher="spawn")
    with pytest.raises(ValueError, match="launcher must be one of"):
        run_on_ranks(f"{HERE}:return_rank", 2, launcher="ssh")
