"""Bad input that the partition / dataset / engine tests do not already cover: NaN and Inf
features, the world size against the number of parts, an out-of-range launcher rank, mixed
dtypes and differing parameters across ranks, a rank without training nodes.

Already covered elsewhere (not repeated here): num_parts < 1, more parts than nodes, unknown
method, non-integer / negative / out-of-range edge ids, wrong row counts
(tests/partition/test_partition_validation.py); missing folder or file, checksum, malformed
meta.json, future format version, pickle payload, rank out of range at load
(tests/partition/test_partition_format.py); unsupported layers (tests/nn/test_convert.py);
from_pyg checks (tests/datasets/test_datasets_validate.py).
"""
from __future__ import annotations

import os

import pytest
import torch
from torch_geometric.data import Data

from pyg_sar.datasets.validate import from_pyg
from pyg_sar.partition import load_partition, partition_graph
from pyg_sar.partition.finite import NonFiniteWarning
from pyg_sar.testing import has_mpi, run_on_ranks

HERE = os.path.abspath(__file__)


def _graph() -> Data:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(12, 3, generator=gen)
    x[4, 1] = float("nan")
    x[7, 0] = float("inf")
    return Data(x=x, edge_index=torch.randint(0, 12, (2, 30), generator=gen),
                y=torch.randint(0, 2, (12,), generator=gen),
                edge_weight=torch.rand(30, generator=gen))


def test_nonfinite_features_are_reported(tmp_path):
    needle = (r"partition_graph: non-finite input: 'x' has 1 NaN and 1 Inf value\(s\) in 2 "
              r"row\(s\) \(first: row 4\)")
    with pytest.warns(NonFiniteWarning, match=needle):
        partition_graph(_graph(), 2, tmp_path / "a", method="random")
    assert (tmp_path / "a" / "meta.json").is_file()  # reported, still written


def test_nonfinite_features_can_be_refused(tmp_path):
    data = _graph()
    data.edge_weight[3] = float("-inf")
    with pytest.raises(ValueError, match=r"'edge_weight' has 0 NaN and 1 Inf value\(s\) in 1 "
                                         r"row\(s\) \(first: row 3\).*on_nonfinite='raise'"):
        partition_graph(data, 2, tmp_path / "b", method="random", on_nonfinite="raise")
    assert not (tmp_path / "b").exists()
    with pytest.raises(ValueError, match="on_nonfinite must be one of"):
        partition_graph(data, 2, tmp_path / "c", on_nonfinite="drop")


def test_from_pyg_nonfinite():
    with pytest.raises(ValueError, match=r"from_pyg: non-finite input: 'data.x' has 1 NaN"):
        from_pyg(_graph(), on_nonfinite="raise")
    with pytest.warns(NonFiniteWarning, match="'data.x'"):
        from_pyg(_graph())
    clean = _graph()
    clean.x = torch.nan_to_num(clean.x, posinf=0.0)
    from_pyg(clean, on_nonfinite="raise")  # finite input passes


def test_world_size_must_equal_number_of_parts(tmp_path):
    partition_graph(_graph(), 3, tmp_path / "p", method="random", on_nonfinite="ignore")
    with pytest.raises(ValueError, match=r"has 3 parts but the job runs on 2 ranks"):
        load_partition(tmp_path / "p", 0, world_size=2)
    assert load_partition(tmp_path / "p", 2, world_size=3).rank == 2


def test_launcher_rank_out_of_range(monkeypatch):
    import pyg_sar
    for var in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MPI_LOCALRANKID"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "2")
    pyg_sar.shutdown()
    with pytest.raises(RuntimeError, match=r"RANK=3 is not in \[0, WORLD_SIZE=2\)"):
        pyg_sar.init()


# ------------------------------------------------------------------- on 2 ranks, one launch
def cross_rank_cases(ctx, parts3: str, parts2: str) -> dict:
    """Every case on every rank; returns the error text (or values) per case."""
    import pyg_sar
    from pyg_sar.distributed.sync import check_parameters_equal, check_same_dtypes
    out = {}
    try:  # a 3-part partition on a 2-rank job, with world_size taken from the job
        pyg_sar.load_partition(parts3, ctx.rank)
        out["world_size"] = None
    except ValueError as e:
        out["world_size"] = str(e)

    torch.manual_seed(ctx.rank)  # forgot to seed identically / to broadcast
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    try:
        check_parameters_equal(model)
        out["params"] = None
    except RuntimeError as e:
        out["params"] = str(e)
    pyg_sar.broadcast_parameters(model)
    check_parameters_equal(model)  # after the broadcast they agree
    model[1].double()
    if ctx.rank == 1:
        model[1].float()
    try:
        check_parameters_equal(model)
        out["param_dtype"] = None
    except RuntimeError as e:
        out["param_dtype"] = str(e)

    x = torch.zeros(5, 3, dtype=torch.float64 if ctx.rank == 1 else torch.float32)
    try:
        check_same_dtypes({"x": x, "y": torch.zeros(5, dtype=torch.long)})
        out["dtypes"] = None
    except RuntimeError as e:
        out["dtypes"] = str(e)

    out["no_train_nodes"] = _no_train_nodes(ctx, parts2)
    return out


def _no_train_nodes(ctx, parts: str) -> dict:
    """Rank 1 has no training node: loss and gradients still equal the single-process ones."""
    from torch_geometric.nn import GCN

    import pyg_sar
    from pyg_sar.nn.functional import cross_entropy
    part = pyg_sar.load_partition(parts, ctx.rank)
    data = _split_graph()
    torch.manual_seed(0)
    ref = GCN(3, 8, 2, 2).double()
    torch.manual_seed(0)
    model = pyg_sar.convert(GCN(3, 8, 2, 2).double())
    loss = cross_entropy(model(part.x.double(), part.graph), part.y, part.train_mask)
    loss.backward()
    pyg_sar.all_reduce_gradients(model)
    ref_loss = torch.nn.functional.cross_entropy(ref(data.x.double(), data.edge_index)[
        data.train_mask], data.y[data.train_mask])
    ref_loss.backward()
    err = max(float((p.grad - q.grad).abs().max()) for p, q in
              zip(model.parameters(), ref.parameters(), strict=True))
    return {"local_train": int(part.train_mask.sum()), "loss": float(loss),
            "ref_loss": float(ref_loss), "grad_err": err}


def _split_graph() -> Data:
    """Training nodes only in the first half of the ids (contiguous parts: rank 0's)."""
    gen = torch.Generator().manual_seed(1)
    n = 20
    train = torch.zeros(n, dtype=torch.bool)
    train[:6] = True
    return Data(x=torch.randn(n, 3, generator=gen),
                edge_index=torch.randint(0, n, (2, 70), generator=gen),
                y=torch.randint(0, 2, (n,), generator=gen), train_mask=train,
                val_mask=~train, test_mask=torch.zeros(n, dtype=torch.bool))


@pytest.fixture(scope="module")
def cross_rank(tmp_path_factory):
    root = tmp_path_factory.mktemp("parts")
    parts3 = partition_graph(_graph(), 3, root / "p3", method="random", on_nonfinite="ignore")
    parts2 = partition_graph(_split_graph(), 2, root / "p2", method="contiguous")
    return run_on_ranks(f"{HERE}:cross_rank_cases", 2, launcher="mpiexec", timeout=240,
                        kwargs={"parts3": str(parts3), "parts2": str(parts2)})


needs_mpi = pytest.mark.skipif(not has_mpi(), reason="needs mpiexec and mpi4py")


@needs_mpi
def test_partition_for_another_world_size_is_refused(cross_rank):
    for res in cross_rank:
        assert "has 3 parts but the job runs on 2 ranks (world size)" in res["world_size"]


@needs_mpi
def test_parameters_that_differ_across_ranks_are_named(cross_rank):
    for r, res in enumerate(cross_rank):
        msg = res["params"]
        assert msg.startswith(f"pyg_sar: model parameters differ across ranks at rank {r}")
        assert "'parameter 0.weight' has a different values (SHA-256 prefix)" in msg
        assert "ranks [0]:" in msg and "ranks [1]:" in msg
        assert "pyg_sar.broadcast_parameters(model)" in msg
        assert "'parameter 1.weight' has a different dtype across ranks (ranks [0]: float64; " \
               "ranks [1]: float32)" in res["param_dtype"]


@needs_mpi
def test_mixed_dtypes_across_ranks_are_named(cross_rank):
    for res in cross_rank:
        assert "'x' has a different dtype across ranks (ranks [0]: float32; ranks [1]: " \
               "float64)" in res["dtypes"]
        assert "'y'" not in res["dtypes"]


@needs_mpi
def test_rank_without_training_nodes_is_exact(cross_rank):
    got = [res["no_train_nodes"] for res in cross_rank]
    assert got[0]["local_train"] == 6 and got[1]["local_train"] == 0
    for res in got:
        assert abs(res["loss"] - res["ref_loss"]) <= 1e-12 * abs(res["ref_loss"])
        assert res["grad_err"] <= 1e-12
