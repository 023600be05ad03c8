"""The launches shared by test_compression_ranks.py and test_wire.py: both partition
``rank_cases.make_graph()`` the same way (P = 3 random, P = 2 METIS, seed P) and run their case
groups (``rank_cases.py``, ``wire_cases.py``) on it, so one launch per P runs both files'
groups (``shared_launch_cases.py``; a rank start imports torch and PyG: 2 launches, 5 rank
starts saved). A rank that raises fails both files' tests with its traceback; a wrong value
fails its own test, as before."""
from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def compression_launches(tmp_path_factory) -> dict[str, dict[int, list]]:
    """Case file ("rank_cases", "wire_cases") -> P -> the ranks' results of its ``suite``."""
    import pyg_sar
    from pyg_sar.testing import run_on_ranks
    from tests.compression import rank_cases as rc
    from tests.compression import test_compression_ranks, test_wire

    files = {"rank_cases": test_compression_ranks.LAUNCHES, "wire_cases": test_wire.LAUNCHES}
    worlds = sorted({w for launches in files.values() for w in launches}, reverse=True)
    root = tmp_path_factory.mktemp("compression")
    graph = rc.make_graph()
    out: dict[str, dict[int, list]] = {name: {} for name in files}
    for world in worlds:
        methods = {launches[world][0] for launches in files.values() if world in launches}
        assert len(methods) == 1, f"P = {world}: the files partition differently: {methods}"
        parts = root / f"p{world}"
        pyg_sar.partition_graph(graph, world, parts, method=methods.pop(), seed=world)
        groups = {name: launches[world][1] for name, launches in files.items()
                  if world in launches}
        ranks = run_on_ranks(f"{HERE / 'shared_launch_cases.py'}:suites", world, timeout=1800,
                             kwargs=dict(parts=str(parts), groups=groups))
        for name in groups:
            out[name][world] = [res[name] for res in ranks]
    return out
