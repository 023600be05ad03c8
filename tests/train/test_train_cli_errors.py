"""`python -m pyg_sar.train`: bad arguments are refused first, in one line naming the flag."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch_geometric.data import Data

from pyg_sar.datasets.registry import KNOWN_NAMES
from pyg_sar.partition import load_partition, partition_graph
from pyg_sar.testing import find_mpiexec
from pyg_sar.train import parse_args
from pyg_sar.train_node import _load

ROOT = Path(__file__).resolve().parents[2]
PROG = "python -m pyg_sar.train"


def _cli(args: list[str], cwd: Path, launcher: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    return subprocess.run([*launcher, sys.executable, "-m", "pyg_sar.train", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)


def _error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "error:" in line]


def _two_part_folder(path: Path) -> Path:
    gen = torch.Generator().manual_seed(0)
    data = Data(x=torch.randn(20, 3, generator=gen),
                edge_index=torch.randint(0, 20, (2, 60), generator=gen),
                y=torch.randint(0, 2, (20,), generator=gen))
    partition_graph(data, 2, path, method="random")
    return path


def test_resume_without_checkpoint_is_refused_before_anything_runs(tmp_path):
    proc = _cli(["--resume", "--epochs", "3"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert _error_lines(proc.stderr) == [
        f"{PROG}: error: --resume needs --checkpoint (the folder to resume from)"]
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not (tmp_path / "runs").exists()  # Cora was not partitioned first


def test_unknown_dataset_is_one_line_listing_the_known_names(tmp_path):
    proc = _cli(["--dataset", "coraa"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    [line] = _error_lines(proc.stderr)
    assert line.startswith(f"{PROG}: error: argument --dataset: unknown dataset 'coraa'")
    assert all(name in line for name in KNOWN_NAMES), line
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 2  # the usage line and the error


@pytest.mark.skipif(find_mpiexec() is None, reason="needs mpiexec (the mpich wheel)")
def test_unknown_dataset_under_mpiexec_prints_once(tmp_path):
    proc = _cli(["--dataset", "coraa"], tmp_path, launcher=(find_mpiexec(), "-n", "2"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(_error_lines(proc.stdout + proc.stderr)) == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def test_bad_numbers_are_refused_by_the_parser(tmp_path):
    for flag in ("--epochs", "--log-every", "--eval-every", "--checkpoint-every"):
        with pytest.raises(SystemExit) as exc:
            parse_args([flag, "0"])
        assert exc.value.code == 2
    with pytest.raises(SystemExit):
        parse_args(["--reference", "--parts", str(tmp_path)])
    proc = _cli(["--log-every", "0"], tmp_path)
    assert proc.returncode == 2
    assert _error_lines(proc.stderr) == [
        f"{PROG}: error: argument --log-every: expected an integer >= 1 (got 0)"]


def test_help_lists_datasets_and_the_parts_dir_it_really_uses(tmp_path):
    text = "".join(_cli(["--help"], tmp_path).stdout.split())  # argparse wraps at hyphens
    assert all(name in text for name in KNOWN_NAMES), text
    template = re.search(r"--parts-dirPARTS_DIRwhere--datasetispartitioned\(default:"
                         r"([^)]+)\)", text).group(1)
    assert template == "runs/parts-<dataset>-<P>-<method>"
    proc = _cli(["--dataset", "cora", "--method", "random", "--epochs", "1"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    made = (template.replace("<dataset>", "cora").replace("<P>", "1")
            .replace("<method>", "random"))
    assert (tmp_path / made / "meta.json").is_file()
    assert f"partitioned cora into 1 part(s) at {made} " in proc.stdout


def test_one_process_refuses_a_two_part_folder_at_load(tmp_path):
    """Unit test: the CLI's loader passes the job's world size (1) to load_partition."""
    parts = _two_part_folder(tmp_path / "p2")
    ctx = SimpleNamespace(rank=0, world_size=1)
    args = parse_args(["--parts", str(parts)])
    expected = (f"the partition at '{parts}' has 2 parts but the job runs on 1 rank "
                f"(world size)")
    with pytest.raises(ValueError, match=re.escape(expected)):
        _load(args, ctx)
    with pytest.raises(ValueError, match=re.escape(expected)):
        load_partition(parts, 0, world_size=1)
    assert load_partition(parts, 1).rank == 1  # without a job, any part may be inspected


def test_one_process_that_called_init_is_refused_a_two_part_folder_at_load(tmp_path,
                                                                           monkeypatch):
    """The README's loop (``ctx = init(); load_partition(path, ctx.rank)``) run as one plain
    process on a 2-part folder fails at load_partition, naming both counts."""
    import pyg_sar
    if pyg_sar.get_context() is not None:
        pytest.skip("another test left a communication context initialised")
    for var in ("RANK", "WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.delenv(var, raising=False)
    parts = _two_part_folder(tmp_path / "p2")
    ctx = pyg_sar.init()
    try:
        assert ctx.world_size == 1
        with pytest.raises(ValueError, match=re.escape(
                f"the partition at '{parts}' has 2 parts but the job runs on 1 rank")):
            pyg_sar.load_partition(parts, ctx.rank)
    finally:
        pyg_sar.shutdown()
    assert load_partition(parts, 0).num_parts == 2  # after shutdown: inspection again


def test_one_process_on_a_two_part_folder_fails_at_load_not_in_forward(tmp_path):
    """One line naming the cause; ``--debug`` shows the traceback (through load_partition)."""
    parts = _two_part_folder(tmp_path / "p2")
    cause = f"the partition at '{parts}' has 2 parts but the job runs on 1 rank (world size)"
    proc = _cli(["--parts", str(parts), "--epochs", "1"], tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"pyg_sar.train: error: {cause}; partition the graph with num_parts=1 or launch 2 ranks "
        f"(or, to inspect one part in this process, pass world_size=2) "
        f"(--debug shows the traceback)"], proc.stderr[-3000:]
    assert "training" not in proc.stdout
    proc = _cli(["--parts", str(parts), "--epochs", "1", "--debug"], tmp_path)
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and f"ValueError: {cause}" in proc.stderr
    assert "load_partition" in proc.stderr and "DistGraph was partitioned" not in proc.stderr


@pytest.mark.parametrize("problem", ["missing", "three_parts"])
def test_two_ranks_print_one_line_each_naming_the_cause(tmp_path, problem):
    """Under mpiexec a failed load is one line per rank at most (the failing rank's error, or
    the line a rank prints when a peer failed first), each naming the cause; no traceback."""
    mpiexec = find_mpiexec()
    if mpiexec is None:
        pytest.skip("needs mpiexec (the mpich wheel of pyg_sar[mpi])")
    if problem == "missing":
        parts = tmp_path / "absent"
        cause = f"FileNotFoundError: no partition at '{parts}'"
    else:
        data = Data(x=torch.randn(20, 3), edge_index=torch.randint(0, 20, (2, 60)),
                    y=torch.randint(0, 2, (20,)))
        parts = tmp_path / "p3"
        partition_graph(data, 3, parts, method="random")
        cause = f"the partition at '{parts}' has 3 parts but the job runs on 2 ranks"
    proc = _cli(["--parts", str(parts), "--epochs", "1"], tmp_path,
                launcher=(mpiexec, "-n", "2"))
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr and 1 <= len(lines) <= 2, proc.stderr[-3000:]
    assert all(cause in line for line in lines), proc.stderr[-3000:]
    assert all(line.startswith(("pyg_sar.train: rank ", "pyg_sar: rank ")) for line in lines)


def test_precision_and_wire_dtype_flags_are_checked_by_the_parser():
    args = parse_args(["--precision", "bf16-mixed", "--wire-dtype", "bfloat16"])
    assert args.precision == "bf16-mixed" and args.wire_dtype == "bfloat16"
    defaults = parse_args([])
    assert defaults.precision == "32" and defaults.wire_dtype == "float32"
    refused = [["--precision", "bf16-true", "--dtype", "float64"],
               ["--precision", "bf16-mixed", "--dtype", "float64"],
               ["--wire-dtype", "bfloat16", "--reference"],
               ["--precision", "bf16-mixed", "--sampler", "sage"],
               ["--wire-dtype", "bfloat16", "--sampler", "sage"],
               ["--precision", "16-mixed"], ["--wire-dtype", "float16"]]
    for argv in refused:
        with pytest.raises(SystemExit) as exc:
            parse_args(argv)
        assert exc.value.code == 2, argv


def test_precision_with_float64_storage_is_one_line_naming_both_flags(tmp_path):
    proc = _cli(["--precision", "bf16-true", "--dtype", "float64"], tmp_path)
    assert proc.returncode == 2
    assert _error_lines(proc.stderr) == [
        f"{PROG}: error: --precision bf16-true computes in bf16 from float32 storage; it does "
        f"not combine with --dtype float64"]
