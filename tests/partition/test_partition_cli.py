"""``python -m pyg_sar.partition`` on a small generated graph."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from pyg_sar.datasets.registry import KNOWN_NAMES
from pyg_sar.partition import load_partition
from pyg_sar.partition.__main__ import main

REPO = Path(__file__).resolve().parents[2]

GRAPH_MODULE = textwrap.dedent("""
    import torch
    from torch_geometric.data import Data

    def build(num_nodes=30, seed=0):
        gen = torch.Generator().manual_seed(seed)
        edge_index = torch.randint(0, num_nodes, (2, 4 * num_nodes), generator=gen)
        return Data(x=torch.randn(num_nodes, 3, generator=gen), edge_index=edge_index,
                    y=torch.randint(0, 2, (num_nodes,), generator=gen))
""")

ROOT = Path(__file__).resolve().parents[2]


def test_cli_partitions_a_generated_graph(tmp_path, monkeypatch, capsys):
    (tmp_path / "cli_graphs.py").write_text(GRAPH_MODULE)
    out = tmp_path / "parts"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    proc = subprocess.run(
        [sys.executable, "-m", "pyg_sar.partition", "--dataset", "cli_graphs:build",
         "--arg", "num_nodes=48", "--num-parts", "3", "--out", str(out), "--method", "metis"],
        env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "edge cut:" in proc.stdout and "halo rows per part:" in proc.stdout
    assert "48 nodes / 192 edges into 3 parts (metis)" in proc.stdout
    parts = [load_partition(out, r) for r in range(3)]
    assert sum(p.num_nodes for p in parts) == 48
    assert sum(p.num_edges for p in parts) == 192
    assert parts[0].meta["num_features"] == 3 and parts[0].meta["num_classes"] == 2

    # In-process: a second run without --overwrite is refused, with it it replaces the folder.
    monkeypatch.syspath_prepend(str(tmp_path))
    args = ["--dataset", "cli_graphs:build", "--num-parts", "2", "--out", str(out),
            "--method", "random", "--seed", "5"]
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    assert "is not empty (pass --overwrite to replace it)" in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0
    assert "into 2 parts (random)" in capsys.readouterr().out
    part = load_partition(out, 1)
    assert part.num_parts == 2 and part.meta["seed"] == 5
    assert isinstance(part.x, torch.Tensor) and part.x.size(1) == 3


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "pyg_sar.partition", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def _error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "error:" in line]


def _cli_in_process(args: list[str], cwd: Path, monkeypatch, capsys) -> tuple[int, str, str]:
    """``main(args)`` run in this process from ``cwd``: (exit code, stdout, stderr). Each
    subprocess costs seconds of imports; one real process (the first case below) checks that
    the error reaches a user's terminal the same way."""
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    try:
        code = main(args)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_errors_name_the_flag_before_loading(tmp_path, monkeypatch, capsys):
    prog = "python -m pyg_sar.partition"
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("user data")
    proc = _cli(["--dataset", "cora", "--num-parts", "2", "--out", str(full)], tmp_path)
    assert proc.returncode == 2
    assert _error_lines(proc.stderr) == [
        f"{prog}: error: argument --out: partition output directory '{full}' is not empty "
        f"(pass --overwrite to replace it)"]
    assert "overwrite=True" not in proc.stderr and "Traceback" not in proc.stderr
    assert [p.name for p in full.iterdir()] == ["keep.txt"]

    code, _, err = _cli_in_process(["--dataset", "coraa", "--num-parts", "2", "--out", "p"],
                                   tmp_path, monkeypatch, capsys)
    assert code == 2 and "Traceback" not in err
    [line] = _error_lines(err)
    assert line.startswith(f"{prog}: error: argument --dataset: unknown dataset 'coraa' (known: ")
    assert all(name in line for name in KNOWN_NAMES), line

    code, _, err = _cli_in_process(
        ["--dataset", "ogb:missing-folder", "--num-parts", "2", "--out", "p"],
        tmp_path, monkeypatch, capsys)
    assert code == 2 and "Traceback" not in err
    [line] = _error_lines(err)
    assert line.startswith(f"{prog}: error: could not load --dataset 'ogb:missing-folder': ")
    assert "missing-folder does not exist" in line, line

    code, _, err = _cli_in_process(["--dataset", "cora", "--num-parts", "0", "--out", "p"],
                                   tmp_path, monkeypatch, capsys)
    assert code == 2 and _error_lines(err) == [
        f"{prog}: error: argument --num-parts: expected an integer >= 1 (got 0)"]
    assert not (tmp_path / "p").exists()

    code, out, _ = _cli_in_process(["--help"], tmp_path, monkeypatch, capsys)
    text = "".join(out.split())  # argparse wraps at hyphens
    assert code == 0 and all(name in text for name in KNOWN_NAMES), text


def test_normalize_features_matches_pyg_examples(tmp_path, monkeypatch, capsys):
    """--normalize-features partitions T.NormalizeFeatures()(data), as PyG's examples train on;
    without it the parts hold the raw features."""
    import torch_geometric.transforms as T
    (tmp_path / "cli_norm_graphs.py").write_text(GRAPH_MODULE.replace(
        "x=torch.randn(num_nodes, 3, generator=gen)",
        "x=torch.rand(num_nodes, 3, generator=gen)"))
    monkeypatch.syspath_prepend(str(tmp_path))
    import cli_norm_graphs
    whole = cli_norm_graphs.build()
    want = T.NormalizeFeatures()(cli_norm_graphs.build()).x
    for flag, expected in ((["--normalize-features"], want), ([], whole.x)):
        out = tmp_path / f"parts{len(flag)}"
        assert main(["--dataset", "cli_norm_graphs:build", "--num-parts", "2", "--out",
                     str(out), *flag]) == 0
        assert ("(features normalised)" in capsys.readouterr().out) == bool(flag)
        for r in range(2):
            part = load_partition(out, r, world_size=2)
            assert torch.equal(part.x, expected[part.node_ids])
    assert not torch.allclose(want, whole.x)
    assert "--normalize-features" in subprocess.run(
        [sys.executable, "-m", "pyg_sar.partition", "--help"], capture_output=True, text=True,
        timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)}).stdout


def _loader_that_fails():
    raise RuntimeError("the disk holding the dataset is full")


def test_an_error_while_partitioning_is_one_line_or_a_traceback_with_debug(tmp_path, capsys):
    """An error the run meets (here the dataset loader's RuntimeError) is one line naming the
    cause; with ``--debug`` it propagates with its traceback."""
    loader = f"{__name__}:_loader_that_fails"
    args = ["--dataset", loader, "--num-parts", "2", "--out", str(tmp_path / "out")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if not line.startswith("partition: ")] == [
        "python -m pyg_sar.partition: error: the disk holding the dataset is full "
        "(--debug shows the traceback)"], err  # after the progress lines
    with pytest.raises(RuntimeError, match="the disk holding the dataset is full"):
        main([*args, "--debug"])
    with pytest.raises(SystemExit) as exit_info:  # an --arg the loader does not take
        main(["--dataset", "cora", "--arg", "bogus=1", "--num-parts", "2", "--out",
              str(tmp_path / "out")])
    assert exit_info.value.code == 2
    assert "could not load --dataset 'cora' with --arg bogus=1: " in capsys.readouterr().err


def _sigint_default() -> None:
    """SIGINT's default action in the child, as a terminal gives its foreground job (a test
    run in the background by a shell without job control inherits it ignored)."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_metis_run(tmp_path):
    """The CLI on a graph whose METIS run takes a while, started in a session of its own; returns
    the process once it printed that METIS starts, and the output folder."""
    out = tmp_path / "out"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyg_sar.partition", "--dataset", "rmat", "--arg",
         "num_nodes=300000", "--arg", "num_edges=3000000", "--num-parts", "8", "--out", str(out)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=_sigint_default)
    seen = []
    for line in proc.stderr:  # the phases, as they start
        seen.append(line)
        if line.startswith("partition: assigning"):
            return proc, out
    os.killpg(proc.pid, 9)
    proc.wait()
    raise AssertionError(f"the CLI ended before METIS started: {seen}")


def _descendants_alive(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return children


def _wait_for_worker(proc) -> list[int]:
    """The CLI's forked METIS worker, once it exists (polled, up to 60 s): METIS runs in it."""
    import time
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        workers = _descendants_alive(proc.pid)
        if workers or proc.poll() is not None:
            return workers
        time.sleep(0.02)
    return _descendants_alive(proc.pid)


def test_sigterm_ends_the_cli_and_its_worker_and_leaves_nothing(tmp_path):
    """``timeout`` or a batch system sends SIGTERM to the CLI's process only: the forked worker
    inside METIS ends too (no orphan that would go on and write later), status 143."""
    import signal
    import time

    proc, out = _start_metis_run(tmp_path)
    try:
        workers = _wait_for_worker(proc)  # inside METIS
        assert proc.poll() is None and len(workers) == 1, workers
        proc.send_signal(signal.SIGTERM)  # the CLI's process only, not its group
        _, err = proc.communicate(timeout=60)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{workers[0]}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not Path(f"/proc/{workers[0]}").exists(), "the worker outlived the CLI"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 143, (proc.returncode, err)
    assert err.strip().splitlines()[-1] == \
        f"python -m pyg_sar.partition: ended by SIGTERM: nothing was written to {out}", err
    assert not out.exists() and not list(tmp_path.glob(".out.tmp-*"))


def test_ctrl_c_stops_the_cli_inside_metis_and_leaves_nothing(tmp_path):
    """Ctrl-C while METIS runs (pymetis holds the interpreter: no Python handler could run)
    ends the CLI within seconds with status 130 and one line, leaving neither the output
    folder nor its staging folder; the phases were printed as they started."""
    import signal
    import time

    proc, out = _start_metis_run(tmp_path)
    try:
        workers = _wait_for_worker(proc)  # inside METIS
        assert proc.poll() is None and len(workers) == 1, \
            f"METIS finished before the interrupt (workers {workers}): use a larger graph"
        interrupted = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - interrupted
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, (proc.returncode, err)
    assert err.strip().splitlines()[-1] == \
        f"python -m pyg_sar.partition: interrupted: nothing was written to {out}", err
    assert took < 10, f"the CLI took {took:.1f} s to stop"
    assert not out.exists() and not list(tmp_path.glob(".out.tmp-*"))
