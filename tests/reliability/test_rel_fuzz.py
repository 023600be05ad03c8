"""Fuzzing (hypothesis, bounded and derandomised for CI) of the graph checks of
partition_graph and of the partition loader: random shapes, dtypes, ids and damaged files give
either a correct partition or a ValueError / RuntimeError / FileNotFoundError, never another
exception, a crash or a wrong answer."""
from __future__ import annotations

import hashlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch_geometric.data import Data

from pyg_sar.partition import load_partition, partition_graph

FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
EXPECTED = (ValueError, RuntimeError, FileNotFoundError)
DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.float32,
          torch.float64, torch.bool]


@st.composite
def graphs(draw):
    num_nodes = draw(st.integers(1, 12))
    num_edges = draw(st.integers(0, 30))
    rows = draw(st.sampled_from([2, 2, 2, 1, 3]))
    ids = draw(st.lists(st.integers(-3, num_nodes + 2), min_size=rows * num_edges,
                        max_size=rows * num_edges))
    dtype = draw(st.sampled_from(DTYPES))
    edge_index = torch.tensor(ids, dtype=torch.int64).view(rows, num_edges)
    edge_index = edge_index.to(dtype) if dtype != torch.bool else edge_index > 0
    x_rows = draw(st.sampled_from([num_nodes, num_nodes, num_nodes, max(num_nodes - 1, 0)]))
    x = torch.randn(x_rows, 2, dtype=torch.float64)
    num_parts = draw(st.integers(0, num_nodes + 1))
    method = draw(st.sampled_from(["random", "contiguous", "metis"]))
    return Data(x=x, edge_index=edge_index, num_nodes=num_nodes), num_parts, method


@FUZZ
@given(case=graphs())
def test_graph_checks_accept_exactly_the_valid_graphs(tmp_path_factory, case):
    data, num_parts, method = case
    out = tmp_path_factory.mktemp("fuzz") / "parts"
    ei = data.edge_index
    valid = (ei.dim() == 2 and ei.size(0) == 2 and not ei.is_floating_point()
             and ei.dtype != torch.bool and 1 <= num_parts <= data.num_nodes
             and data.x.size(0) == data.num_nodes
             and (ei.numel() == 0 or (int(ei.min()) >= 0 and int(ei.max()) < data.num_nodes)))
    if not valid:
        with pytest.raises(ValueError):
            partition_graph(data, num_parts, out, method=method)
        assert not out.exists()
        return
    partition_graph(data, num_parts, out, method=method)
    stored, x_rows = [], {}
    for r in range(num_parts):
        part = load_partition(out, r)
        stored += part.global_edge_index().t().tolist()
        for gid, row in zip(part.node_ids.tolist(), part.x):
            x_rows[gid] = row
    assert sorted(map(tuple, stored)) == sorted(map(tuple, ei.long().t().tolist()))
    assert sorted(x_rows) == list(range(data.num_nodes))
    assert all(torch.equal(x_rows[i], data.x[i]) for i in range(data.num_nodes))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    gen = torch.Generator().manual_seed(0)
    data = Data(x=torch.randn(20, 3, generator=gen), y=torch.randint(0, 3, (20,), generator=gen),
                edge_index=torch.randint(0, 20, (2, 60), generator=gen),
                edge_weight=torch.rand(60, generator=gen))
    return partition_graph(data, 2, tmp_path_factory.mktemp("pristine") / "parts",
                           method="random")


def _copy(pristine: Path, tmp: Path) -> Path:
    target = tmp / "parts"
    shutil.copytree(pristine, target)
    return target


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _load_all(root: Path) -> None:
    for r in range(2):
        load_partition(root, r)


@FUZZ
@given(data=st.data())
def test_damaged_files_are_refused(tmp_path_factory, pristine, data):
    root = _copy(pristine, tmp_path_factory.mktemp("damaged"))
    rel = data.draw(st.sampled_from([f for f in _files(root) if f != "meta.json"]))
    raw = bytearray((root / rel).read_bytes())
    how = data.draw(st.sampled_from(["flip", "truncate", "append", "empty"]))
    if how == "flip":
        raw[data.draw(st.integers(0, len(raw) - 1))] ^= data.draw(st.integers(1, 255))
    elif how == "truncate":
        raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
    elif how == "append":
        raw += bytes(data.draw(st.binary(min_size=1, max_size=16)))
    else:
        raw = bytearray()
    (root / rel).write_bytes(bytes(raw))
    rank = int(rel[4]) if rel.startswith("part") else None
    if rank is None:  # node_map.npy: not read by load_partition
        _load_all(root)
        return
    with pytest.raises(EXPECTED, match="checksum|SHA-256|does not match"):
        load_partition(root, rank)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                 max_size=3), max_leaves=6)


@FUZZ
@given(data=st.data())
def test_edited_metadata_is_refused_or_harmless(tmp_path_factory, pristine, data):
    root = _copy(pristine, tmp_path_factory.mktemp("meta"))
    meta = json.loads((root / "meta.json").read_text())
    key = data.draw(st.sampled_from(sorted(meta)))
    path = [key]
    node = meta[key]
    while isinstance(node, (dict, list)) and node and data.draw(st.booleans()):
        sub = data.draw(st.sampled_from(sorted(node) if isinstance(node, dict)
                                        else list(range(len(node)))))
        path.append(sub)
        node = node[sub]
    target = meta
    for p in path[:-1]:
        target = target[p]
    if data.draw(st.booleans()) and isinstance(target, dict):
        del target[path[-1]]
    else:
        target[path[-1]] = data.draw(json_values)
    (root / "meta.json").write_text(json.dumps(meta))
    try:
        _load_all(root)
    except EXPECTED:
        return
    # Accepted: then the edit must not have changed what a rank loads.
    for r in range(2):
        a, b = load_partition(pristine, r), load_partition(root, r)
        assert torch.equal(a.x, b.x) and torch.equal(a.node_ids, b.node_ids)
        assert torch.equal(a.global_edge_index(), b.global_edge_index())


@FUZZ
@given(data=st.data())
def test_replaced_arrays_with_valid_checksums_are_checked(tmp_path_factory, pristine, data):
    """An array replaced by another of random dtype, shape and values, with its checksum
    updated in meta.json: shape, dtype and id-range checks catch it or it loads correctly
    shaped data."""
    root = _copy(pristine, tmp_path_factory.mktemp("arrays"))
    rel = data.draw(st.sampled_from([f for f in _files(root) if f.startswith("part0/")]))
    dtype = data.draw(st.sampled_from(["int64", "int32", "float32", "float64", "bool"]))
    shape = data.draw(st.lists(st.integers(0, 25), min_size=1, max_size=2))
    values = np.asarray(data.draw(st.lists(st.integers(-3, 40), min_size=int(np.prod(shape)),
                                           max_size=int(np.prod(shape))))).astype(dtype)
    buf = io.BytesIO()
    np.save(buf, values.reshape(shape), allow_pickle=False)
    (root / rel).write_bytes(buf.getvalue())
    meta = json.loads((root / "meta.json").read_text())
    meta["files"][rel] = hashlib.sha256(buf.getvalue()).hexdigest()
    (root / "meta.json").write_text(json.dumps(meta))
    try:
        part = load_partition(root, 0)
    except EXPECTED:
        return
    graph = part.graph
    for block in graph.blocks:  # whatever loaded is internally consistent
        assert int(block.rowptr[-1]) == block.col.numel()
        assert block.col.numel() == 0 or int(block.col.max()) < block.num_src
