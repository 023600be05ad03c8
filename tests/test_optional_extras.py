"""MPI, METIS and KaMinPar are pip extras (``pyg_sar[mpi]``, ``[metis]``, ``[large]``): where one
is missing, the code that needs it says which extra installs it. The modules are made
unimportable here as an uninstalled package is (``sys.modules[name] = None``)."""
from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import torch

from pyg_sar._extras import EXTRAS, MissingExtraError

ROOT = Path(__file__).resolve().parents[1]
METIS_MESSAGE = ("method='metis' needs pymetis: pip install 'pyg_sar[metis]' (or use "
                 "method='random')")


def _hide(monkeypatch, module: str) -> None:
    """``module`` and its loaded submodules become unimportable (ModuleNotFoundError)."""
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, module, None)


@pytest.fixture
def no_pymetis(monkeypatch):
    from pyg_sar.partition import metis
    _hide(monkeypatch, "pymetis")
    metis._metis_lib.cache_clear()  # a cached library would bypass the import
    yield
    metis._metis_lib.cache_clear()


def _ring(n: int = 40) -> np.ndarray:
    src = np.arange(n)
    return np.stack([np.concatenate([src, (src + 1) % n]), np.concatenate([(src + 1) % n, src])])


@pytest.mark.parametrize("balance", ["nodes", "edges"])
def test_metis_without_pymetis_names_the_extra(no_pymetis, balance):
    from pyg_sar.partition.metis import metis_parts
    with pytest.raises(MissingExtraError) as err:
        metis_parts(_ring(), 40, 2, seed=0, balance=balance)
    assert str(err.value) == METIS_MESSAGE
    assert isinstance(err.value, ImportError)
    # one part needs no partitioner
    assert (metis_parts(_ring(), 40, 1, seed=0, balance=balance) == 0).all()


def test_partition_graph_without_pymetis_names_the_extra_and_random_still_works(no_pymetis,
                                                                               tmp_path):
    from torch_geometric.data import Data

    import pyg_sar
    data = Data(x=torch.randn(40, 3), edge_index=torch.from_numpy(_ring()), num_nodes=40)
    with pytest.raises(ImportError, match=r"pip install 'pyg_sar\[metis\]'"):
        pyg_sar.partition_graph(data, 2, tmp_path / "metis", method="metis")
    out = pyg_sar.partition_graph(data, 2, tmp_path / "random", method="random")
    assert (Path(out) / "part_0").exists() or any(Path(out).iterdir())


def test_hetero_metis_without_pymetis_names_the_extra(no_pymetis):
    from pyg_sar.partition.assign import assign_hetero_parts
    with pytest.raises(MissingExtraError, match=r"pip install 'pyg_sar\[metis\]'"):
        assign_hetero_parts([40], [(0, 0, _ring())], 2, "metis", 0)


def test_partition_cli_without_pymetis_names_the_extra(no_pymetis, tmp_path, capsys):
    from pyg_sar.partition.__main__ import main
    code = main(["--dataset", "sbm", "--arg", "num_nodes=60", "--num-parts", "2",
                 "--method", "metis", "--out", str(tmp_path / "parts")])
    assert code == 2
    assert ("method='metis' needs pymetis: pip install 'pyg_sar[metis]' (or use --method "
            "random)") in capsys.readouterr().err


def test_streaming_writer_without_partitioners_names_the_extras(monkeypatch, tmp_path):
    from pyg_sar.partition import stream
    _hide(monkeypatch, "kaminpar")
    _hide(monkeypatch, "pymetis")
    with pytest.raises(MissingExtraError, match=r"method='kaminpar' needs KaMinPar: "
                                                r"pip install 'pyg_sar\[large\]'"):
        stream.write_partition_streaming(tmp_path / "missing", 2, tmp_path / "out",
                                         method="kaminpar")
    with pytest.raises(MissingExtraError, match=r"pip install 'pyg_sar\[metis\]'"):
        stream.write_partition_streaming(tmp_path / "missing", 2, tmp_path / "out",
                                         method="metis")


def test_init_under_mpiexec_without_mpi4py_names_the_extra(monkeypatch):
    import pyg_sar
    from pyg_sar.distributed.context import detect_launcher
    assert pyg_sar.get_context() is None
    _hide(monkeypatch, "mpi4py")
    for var in ("RANK", "WORLD_SIZE", "SLURM_JOB_ID", "SLURM_STEP_ID", "PYG_SAR_SUPERVISE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PMI_RANK", "0")
    monkeypatch.setenv("PMI_SIZE", "2")
    assert detect_launcher() == "mpiexec"
    with pytest.raises(RuntimeError, match=r"started by an MPI launcher, but mpi4py is not "
                                           r"installed: pip install 'pyg_sar\[mpi\]'"):
        pyg_sar.init(supervise=False)
    assert pyg_sar.get_context() is None


def test_backend_mpi_without_mpi4py_warns_with_the_extra_and_runs_alone(monkeypatch):
    import pyg_sar
    _hide(monkeypatch, "mpi4py")
    for var in ("RANK", "WORLD_SIZE", "SLURM_JOB_ID", "PYG_SAR_SUPERVISE", *(
            v for pair in (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "x"),
                           ("PMIX_RANK", "MPI_LOCALRANKID")) for v in pair)):
        monkeypatch.delenv(var, raising=False)
    with pytest.warns(UserWarning, match=r"pip install 'pyg_sar\[mpi\]'"):
        ctx = pyg_sar.init(backend="mpi", supervise=False)
    assert ctx.world_size == 1


def test_every_extra_is_declared_and_all_holds_them():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert {extra for extra, _ in EXTRAS.values()} <= set(extras)
    assert any(r.startswith("mpi4py") for r in extras["mpi"])
    assert any(r.startswith("mpich") for r in extras["mpi"])
    assert any(r.startswith("pymetis") for r in extras["metis"])
    assert any(r.startswith("kaminpar") for r in extras["large"])
    assert sorted(extras["all"]) == sorted(extras["mpi"] + extras["metis"] + extras["large"])
    names = {r.split(">")[0].split("=")[0].split("<")[0].strip() for r in project["dependencies"]}
    assert not names & {"mpi4py", "mpich", "pymetis", "kaminpar"}  # optional, not required
