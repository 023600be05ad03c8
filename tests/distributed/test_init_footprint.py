"""``pyg_sar`` is a library: under ``mpiexec -n 2``, importing it, a plain init and a converted
model's training step install no torch global hook, no sys hook, no excepthook, start no Python
thread and no child process, and change no signal handler;
``init(supervise=True)`` does (the watchdog thread, the witness process, the excepthook), and
``pyg_sar.shutdown()`` removes all of it. Native threads (MPI's own) are compared between the
two runs: supervision adds exactly its own."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from pyg_sar.distributed.supervision import supervision_requested
from pyg_sar.testing import find_mpiexec, has_mpi

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(Path(__file__).with_name("process_footprint.py"))


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK",
                        "PYG_SAR_SUPERVISE", "PYG_SAR_WATCHDOG", "PYG_SAR_WITNESS")
           and not k.startswith(("PMI_", "OMPI_", "HYDRA_", "TORCHELASTIC_"))}
    return dict(env, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", **extra)


@pytest.fixture(scope="module")
def footprints(tmp_path_factory):
    if not has_mpi():
        pytest.skip("needs mpiexec and mpi4py")
    runs = {}
    for supervise in ("0", "1"):
        out = tmp_path_factory.mktemp(f"footprint{supervise}")
        done = subprocess.run([find_mpiexec(), "-n", "2", sys.executable, SCRIPT, str(out),
                               supervise], env=_env(), capture_output=True, text=True,
                              timeout=240)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        runs[supervise] = [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]
    return runs


PROCESS_WIDE = ("torch_hooks", "sys_hooks", "meta_path", "path_hooks", "warning_filters")


def test_plain_init_leaves_the_process_alone(footprints):
    for rank in footprints["0"]:
        before, after, ended = rank["before"], rank["after"], rank["shutdown"]
        assert rank["sum"] == [2.0, 2.0]
        assert not after["supervised"] and not after["has_supervisor"]
        # No process-wide hook or patch, even while a converted model trains over a DistGraph.
        assert all(n == 0 for n in before["torch_hooks"].values()), before["torch_hooks"]
        for key in PROCESS_WIDE:
            assert after[key] == before[key], key
            assert ended[key] == before[key], key
        for state in (after, ended):
            assert state["excepthook_is_default"]
            assert state["python_threads"] == before["python_threads"] == ["MainThread"]
            assert state["children"] == []
            assert state["signals"] == before["signals"]


def test_supervised_init_installs_and_shutdown_removes(footprints):
    for plain, rank in zip(footprints["0"], footprints["1"]):
        before, after, ended = rank["before"], rank["after"], rank["shutdown"]
        assert rank["sum"] == [2.0, 2.0]
        assert after["supervised"] and after["has_supervisor"]
        assert not after["excepthook_is_default"]
        assert after["python_threads"] == ["MainThread", "pyg_sar-watchdog"]
        assert len(after["children"]) == 1 and "witness.py" in after["children"][0], \
            after["children"]
        # The same native threads as the plain run (MPI's own), plus the watchdog's.
        assert after["tasks"] == plain["after"]["tasks"] + 1
        if after["atexit"] is not None:
            assert after["atexit"] == plain["after"]["atexit"] + 1  # the fast exit on failure
        assert after["signals"] == before["signals"]
        # After a clean shutdown: as the plain run after its shutdown.
        assert ended["excepthook_is_default"]
        assert ended["python_threads"] == ["MainThread"]
        assert ended["children"] == []
        assert ended["tasks"] == plain["shutdown"]["tasks"]
        assert ended["exit_hooks_installed"] is False  # atexit handler unregistered
        assert ended["signals"] == before["signals"]
        for key in PROCESS_WIDE:  # supervision's excepthook is sys.excepthook, checked above
            assert ended[key] == before[key], key


def test_single_process_init_leaves_the_process_alone():
    code = ("import sys, threading, pyg_sar; n = threading.active_count(); "
            "ctx = pyg_sar.init(); assert sys.excepthook is sys.__excepthook__; "
            "assert threading.active_count() == n and ctx.supervisor is None; "
            "ctx = None; pyg_sar.shutdown(); "
            "ctx = pyg_sar.init(supervise=True); assert ctx.supervisor is None; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


@pytest.mark.parametrize("env,arg,default,want", [
    ({}, None, False, False),
    ({}, None, True, True),
    ({"PYG_SAR_SUPERVISE": "1"}, None, False, True),
    ({"PYG_SAR_SUPERVISE": "0"}, None, True, False),
    ({"PYG_SAR_SUPERVISE": "1"}, False, False, False),  # the argument wins
    ({"PYG_SAR_SUPERVISE": "off"}, True, False, True),
])
def test_supervision_requested(monkeypatch, env, arg, default, want):
    for name in ("PYG_SAR_SUPERVISE", "PYG_SAR_WATCHDOG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert supervision_requested(arg, default) is want


def test_old_variable_is_read_with_a_warning_and_bad_values_fail(monkeypatch):
    monkeypatch.delenv("PYG_SAR_SUPERVISE", raising=False)
    monkeypatch.setenv("PYG_SAR_WATCHDOG", "0")
    with pytest.warns(FutureWarning, match="PYG_SAR_WATCHDOG is now called PYG_SAR_SUPERVISE"):
        assert supervision_requested(None, True) is False
    monkeypatch.setenv("PYG_SAR_WATCHDOG", "1")
    with pytest.warns(FutureWarning):
        assert supervision_requested(None, False) is True
    monkeypatch.setenv("PYG_SAR_SUPERVISE", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert supervision_requested(None, False) is True  # both agree: no warning
    monkeypatch.setenv("PYG_SAR_SUPERVISE", "0")
    with pytest.raises(ValueError, match="PYG_SAR_SUPERVISE='0' and PYG_SAR_WATCHDOG='1' "
                                         "disagree"):
        supervision_requested(None, False)
    monkeypatch.delenv("PYG_SAR_WATCHDOG")
    monkeypatch.setenv("PYG_SAR_SUPERVISE", "maybe")
    with pytest.raises(ValueError, match="PYG_SAR_SUPERVISE='maybe' is not a switch"):
        supervision_requested(None, False)


def test_exit_hooks_chain_the_previous_hook_and_uninstall_cleanly(monkeypatch):
    """In-process: the excepthook reports an uncaught exception, then calls the hook that was
    in place; uninstall restores it and cancels a pending grace timer."""
    import sys
    import threading
    import time

    from pyg_sar.distributed.exit_hooks import ExitHooks
    from pyg_sar.distributed.hub import FailureHub

    seen = []
    monkeypatch.setattr(sys, "excepthook", lambda *a: seen.append(("previous", a[0])))
    previous = sys.excepthook
    hub = FailureHub(0, 2)
    hooks = ExitHooks(hub, grace=0.2, report_failure=lambda e: seen.append(("failure", str(e))),
                      report_interrupt=lambda: seen.append(("interrupt", None)))
    hooks.install()
    try:
        assert sys.excepthook == hooks._excepthook
        sys.excepthook(ValueError, ValueError("boom"), None)
        sys.excepthook(KeyboardInterrupt, KeyboardInterrupt(), None)
        assert seen == [("failure", "boom"), ("previous", ValueError), ("interrupt", None),
                        ("previous", KeyboardInterrupt)]
        assert hub.exiting_with_error
        hooks.arm("pyg_sar: rank 0 stops: rank 1 failed")  # would os._exit in 0.2 s
        timers = [t for t in threading.enumerate() if t.name == "pyg_sar-failure-grace"]
        assert len(timers) == 1
    finally:
        hooks.uninstall()
    assert sys.excepthook is previous and not hooks.installed
    time.sleep(0.4)  # past the grace: still alive, the timer was cancelled
    assert not any(t.name == "pyg_sar-failure-grace" for t in threading.enumerate())
