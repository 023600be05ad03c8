"""The engine tests' shared launches: test_engine_exactness.py and test_fused_attention.py
check the same partitions of ``engine_cases.make_graph()`` at P = 1..4 (METIS for even P,
random with seed P for odd P), so one launch per P runs both suites
(``shared_launch_cases.py``). Starting a rank imports torch and PyG; sharing saves 4 launches
(10 rank starts). A rank that fails fails both files' tests with its traceback; a case that is
off fails its own test, named by its case key, as before.

The P = 3 cases that need torch.distributed's gloo group (``gloo3_launch``) span tests/core and
tests/nn; their shared launch is in tests/conftest.py."""
from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
WORLD_SIZES = (1, 2, 3, 4)


@pytest.fixture(scope="session")
def engine_launches(tmp_path_factory) -> dict[int, list[dict]]:
    """P -> the ranks' results, each ``{"engine": ..., "fused": ...}`` (``"fused"`` only where
    the native library is built)."""
    import pyg_sar
    from pyg_sar.datasets import sbm
    from pyg_sar.ops import native_available
    from pyg_sar.testing import run_on_ranks
    from tests.core import engine_cases as ec
    from tests.core import test_engine_exactness as te
    from tests.core import test_fused_attention as tf

    assert te.WORLD_SIZES == tf.WORLD_SIZES == WORLD_SIZES
    root = tmp_path_factory.mktemp("engine")
    graph = ec.make_graph()
    small_sbm = sbm(num_nodes=240, num_classes=4, avg_degree=6.0, num_features=8, seed=1)
    out = {}
    for p in WORLD_SIZES:
        method = "metis" if p % 2 == 0 else "random"
        pyg_sar.partition_graph(graph, p, root / f"g{p}", method=method, seed=p)
        pyg_sar.partition_graph(small_sbm, p, root / f"s{p}", method="metis")
        engine = dict(parts=str(root / f"g{p}"), sbm_parts=str(root / f"s{p}"), cases=te.CASES,
                      steps=te.STEPS)
        fused = dict(parts=str(root / f"g{p}"), cases=tf.CASES) if native_available() else None
        out[p] = run_on_ranks(f"{HERE / 'shared_launch_cases.py'}:engine_and_fused", p,
                              timeout=1500, kwargs=dict(engine=engine, fused=fused))
    return out
