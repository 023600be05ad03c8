"""The ported PyG scripts train exactly as one process: run in float64 for a few epochs at
P = 1, 2 and 3 (``tests/examples/runner.py --float64 --save-params``), their final model
parameters agree to 1e-10 (relative to each tensor's largest entry).

One launch per P runs every script of ``PORTS`` (torch, PyG and MPI start once per launch).
``autoencoder.py`` runs as GAE and as VGAE (``--variational``: keyed reparametrization noise,
the KL term scaled by the whole graph's node count). These scripts call their models through
methods other than ``forward`` (``model.encode``,
``model.decode``, ``model.recon_loss``, ``model.test``), draw negatives with
``pyg_sar.link.negative_sampling`` (the same at every P) and use no dropout, so nothing but
the number of ranks differs between the runs. ``rgcn_link_pred.py`` runs on a small knowledge
graph generated in FB15k-237's raw format (``kg_data.py``) with its dropout off
(``--no-dropout``: each rank would draw its own masks); its node table is sharded, so its rows
are compared through the saved ``node_ids``. ``correct_and_smooth.py`` (an MLP, then
``CorrectAndSmooth`` over ``adj_t`` scaled by its degrees) runs on a small graph generated in
ogbn-products' raw layout (``ogb_data.py``); its final ``y_soft`` (after correct and smooth) is
compared row by row too.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from tests.closeness import rel_error
from tests.examples.test_examples import EXAMPLES, RUNNER, TIMEOUT_S, _has_mpi, launch

EPOCHS = 4
TOL = 1e-10
# (script, its arguments): the saved parameters are named "<script>[_<argument>...]".
PORTS = [("link_pred", []), ("autoencoder", []), ("autoencoder", ["--variational"]),
         ("infomax_transductive", []), ("rgcn_link_pred", []), ("correct_and_smooth", [])]
# parameters with one row per node (sharded by the port), and a script's outputs per node
# (``runner.py --save-rows``): compared row by row via node ids
NODE_TABLES = {"rgcn_link_pred": ("encoder.node_emb",),
               "correct_and_smooth": ("__rows__y_soft",)}
NAMES = ["_".join([script, *(a.lstrip("-") for a in args)]) for script, args in PORTS]


def _run(tmp: Path, ranks: int, scripts: dict[str, Path]) -> dict[str, dict[str, torch.Tensor]]:
    prefix = str(tmp / f"p{ranks}_")
    cmd = [sys.executable, str(RUNNER), "--max-epochs", str(EPOCHS), "--float64",
           "--no-dropout", "--save-params", prefix, "--save-rows", "y_soft"]
    for i, (script, args) in enumerate(PORTS):
        cmd += ([":::"] if i else []) + [str(scripts.get(script, EXAMPLES / f"{script}.py")),
                                         *args]
    launch(cmd, tmp, ranks=ranks, timeout=TIMEOUT_S)
    return {name: torch.load(f"{prefix}{name}.rank0.pt", weights_only=True) for name in NAMES}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[int, dict]:
    from tests.examples.kg_data import prepare_rgcn_example
    from tests.examples.ogb_data import prepare_correct_and_smooth_example
    tmp = tmp_path_factory.mktemp("port_exactness")
    scripts = {"rgcn_link_pred": prepare_rgcn_example(tmp / "kg"),
               "correct_and_smooth": prepare_correct_and_smooth_example(tmp / "ogb")}
    out = {1: _run(tmp, 1, scripts)}
    if _has_mpi():
        for p in (2, 3):
            out[p] = _run(tmp, p, scripts)
    return out


def _whole_tables(run: dict[str, torch.Tensor], tables: tuple[str, ...]) -> dict:
    """``run`` with each node table laid out by original id (rows the run did not hold:
    NaN)."""
    ids = run["__node_ids__"]
    out = dict(run)
    for name in tables:
        rows = run[name]
        whole = rows.new_full((int(ids.max()) + 1, *rows.shape[1:]), float("nan"))
        whole[ids] = rows
        out[name] = whole
    return out


@pytest.mark.parametrize("p", [2, 3])
@pytest.mark.parametrize("name", NAMES)
def test_port_trains_as_one_process(runs, name, p):
    if p not in runs:
        pytest.skip("needs mpiexec and mpi4py")
    want, got = runs[1][name], runs[p][name]
    tables = NODE_TABLES.get(name, ())
    if tables:  # rank 0's rows at P against the same nodes' rows at P = 1
        assert all(got[t].shape[0] < want[t].shape[0] for t in tables)  # sharded
        want = _whole_tables(want, tables)
        for t in tables:
            want[t] = want[t][got["__node_ids__"]]
    assert want.keys() == got.keys()
    assert all(t.dtype == torch.float64 for t in want.values() if t.is_floating_point())
    errors = {k: rel_error(got[k], want[k]) for k in want if want[k].is_floating_point()}
    assert max(errors.values()) <= TOL, errors
