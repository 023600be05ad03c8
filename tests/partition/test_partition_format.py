"""On-disk format safety: atomic writes, refusal/overwrite, checksums, metadata, no unpickling."""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import pyg_sar.partition.writer as writer
from pyg_sar.partition import (
    FORMAT_VERSION,
    ChecksumError,
    MetaError,
    load_partition,
    partition_graph,
    read_meta,
)
from pyg_sar.partition.storage import load_npy

REPO = Path(__file__).resolve().parents[2]


def _siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name)


def _rewrite_meta(path: Path, edit) -> None:
    meta = json.loads((path / "meta.json").read_text())
    edit(meta)
    (path / "meta.json").write_text(json.dumps(meta))


def test_failure_mid_write_leaves_nothing_loadable(graph, tmp_path, monkeypatch):
    out = tmp_path / "parts"
    calls = {"n": 0}
    real_save = writer.save_npy

    def failing_save(path, array):
        calls["n"] += 1
        if calls["n"] == 6:
            raise OSError("disk full (simulated)")
        return real_save(path, array)

    monkeypatch.setattr(writer, "save_npy", failing_save)
    with pytest.raises(OSError, match="simulated"):
        partition_graph(graph, 2, out, method="random")
    assert calls["n"] == 6
    assert not out.exists()
    assert _siblings(out) == []  # the temporary folder was removed
    with pytest.raises(FileNotFoundError):
        load_partition(out, 0)

    # Into an existing empty folder: it stays empty.
    out.mkdir()
    calls["n"] = 0
    with pytest.raises(OSError, match="simulated"):
        partition_graph(graph, 2, out, method="random")
    assert list(out.iterdir()) == []


def test_killed_mid_write_leaves_nothing_loadable(tmp_path):
    # A hard kill (no cleanup) between two files: only a hidden temporary folder remains,
    # without meta.json, and out_dir does not exist.
    script = f"""
import os, torch
from torch_geometric.data import Data
import pyg_sar.partition.writer as writer
from pyg_sar.partition import partition_graph
real = writer.save_npy
count = [0]
def save(path, array):
    count[0] += 1
    if count[0] == 5:
        os._exit(3)
    return real(path, array)
writer.save_npy = save
data = Data(x=torch.randn(20, 2), edge_index=torch.randint(0, 20, (2, 60)))
partition_graph(data, 2, {str(tmp_path / "parts")!r}, method="random")
"""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          timeout=120)
    assert proc.returncode == 3, proc.stderr.decode()[-2000:]
    assert not (tmp_path / "parts").exists()
    leftovers = list(tmp_path.iterdir())
    assert len(leftovers) == 1 and leftovers[0].name.startswith(".parts.tmp-")
    assert not (leftovers[0] / "meta.json").exists()
    with pytest.raises(FileNotFoundError):
        load_partition(leftovers[0], 0)


def test_empty_out_dir_is_accepted(graph, tmp_path):
    out = tmp_path / "parts"
    out.mkdir()
    partition_graph(graph, 2, out)
    assert load_partition(out, 1).graph.world_size == 2


def test_non_empty_out_dir_is_refused(graph, tmp_path):
    out = tmp_path / "parts"
    out.mkdir()
    (out / "keep.txt").write_text("precious")
    with pytest.raises(ValueError, match="not empty") as info:
        partition_graph(graph, 2, out)
    assert str(out) in str(info.value)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert _siblings(out) == []

    file_target = tmp_path / "file"
    file_target.write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        partition_graph(graph, 2, file_target, overwrite=True)


def test_overwrite_replaces_the_partition(graph, tmp_path):
    out = tmp_path / "parts"
    partition_graph(graph, 2, out)
    old = load_partition(out, 0).fingerprint
    partition_graph(graph, 3, out, method="contiguous", overwrite=True)
    new = load_partition(out, 2)
    assert new.num_parts == 3 and new.meta["method"] == "contiguous"
    assert new.fingerprint != old
    assert not (out / "part3").exists()
    assert _siblings(out) == []  # no temporary or old folder left behind


def test_tampered_file_is_detected(graph, tmp_path):
    partition_graph(graph, 2, tmp_path)
    target = tmp_path / "part1" / "node" / "x.npy"
    raw = bytearray(target.read_bytes())
    raw[-1] ^= 0x01
    target.write_bytes(bytes(raw))
    with pytest.raises(ChecksumError, match=r"part1/node/x\.npy"):
        load_partition(tmp_path, 1)
    load_partition(tmp_path, 0)  # rank 0 reads only its own part: unaffected


def test_missing_file_is_reported(graph, tmp_path):
    partition_graph(graph, 2, tmp_path)
    (tmp_path / "part0" / "col.npy").unlink()
    with pytest.raises(FileNotFoundError, match=r"part0/col\.npy"):
        load_partition(tmp_path, 0)


def test_rank_out_of_range(graph, tmp_path):
    partition_graph(graph, 2, tmp_path)
    for rank in (-1, 2, "0", 1.0):
        with pytest.raises(ValueError, match="out of range"):
            load_partition(tmp_path, rank)


def test_future_format_version(graph, tmp_path):
    partition_graph(graph, 2, tmp_path)
    _rewrite_meta(tmp_path, lambda m: m.update(format_version=FORMAT_VERSION + 1))
    with pytest.raises(MetaError, match=f"newer than the supported version {FORMAT_VERSION}"):
        load_partition(tmp_path, 0)


@pytest.mark.parametrize("edit, match", [
    (lambda m: m.update(format_version="1"), "format_version"),
    (lambda m: m.pop("num_parts"), "num_parts"),
    (lambda m: m.update(node_offsets=m["node_offsets"][:-1]), "node_offsets"),
    (lambda m: m.update(node_offsets=[0, 30, 20]), "node_offsets"),
    (lambda m: m.update(part_num_edges=[1, 2]), "part_num_edges"),
    (lambda m: m["parts"][0].update(send_counts=[0, 10 ** 6]), "sends"),
    (lambda m: m["node_keys"]["x"].update(dtype="os.system"), "dtype"),
    (lambda m: m["node_keys"]["x"].update(storage_dtype="O"), "cannot store"),
    (lambda m: m["node_keys"].update({"../../evil": m["node_keys"]["x"]}), "invalid tensor key"),
    (lambda m: m["files"].update({"part0/x.npy": "abc"}), "SHA-256"),
    (lambda m: m["files"].pop("part0/node_ids.npy"), "no checksum listed"),
])
def test_malformed_meta(graph, tmp_path, edit, match):
    partition_graph(graph, 2, tmp_path)
    _rewrite_meta(tmp_path, edit)
    with pytest.raises(MetaError, match=match):
        load_partition(tmp_path, 0)


def test_meta_not_json(graph, tmp_path):
    partition_graph(graph, 2, tmp_path)
    (tmp_path / "meta.json").write_text("{not json")
    with pytest.raises(MetaError, match="not valid JSON"):
        read_meta(tmp_path)
    (tmp_path / "meta.json").write_text("[1, 2]")
    with pytest.raises(MetaError, match="JSON object"):
        read_meta(tmp_path)


class _CreateFile:
    """Unpickling this calls ``open(path, "w")``: it creates ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_pickled_npy_is_refused_without_running_code(graph, tmp_path):
    # The payload works: unpickling it creates its marker file.
    probe = tmp_path / "probe"
    pickle.loads(pickle.dumps(_CreateFile(probe)))
    assert probe.exists()

    out = tmp_path / "parts"
    partition_graph(graph, 2, out)
    marker = tmp_path / "pwned"
    evil = out / "part0" / "node" / "x.npy"
    evil.unlink()
    array = np.empty(1, dtype=object)
    array[0] = _CreateFile(marker)
    np.save(evil, array, allow_pickle=True)
    digest = hashlib.sha256(evil.read_bytes()).hexdigest()
    _rewrite_meta(out, lambda m: m["files"].update({"part0/node/x.npy": digest}))

    with pytest.raises(ValueError, match=r"refusing to load partition file .*x\.npy"):
        load_partition(out, 0)
    with pytest.raises(ValueError, match="refusing"):
        load_npy(evil, digest)
    assert not marker.exists()


def test_non_npy_file_is_refused(tmp_path):
    path = tmp_path / "junk.npy"
    path.write_bytes(b"definitely not an npy file")
    with pytest.raises(ValueError, match="not a valid .npy"):
        load_npy(path, hashlib.sha256(path.read_bytes()).hexdigest())


def test_only_own_part_is_read(graph, tmp_path, monkeypatch):
    partition_graph(graph, 3, tmp_path)
    opened = []
    real_load = np.load

    def spy(fp, *args, **kwargs):
        opened.append(Path(fp.name).relative_to(tmp_path).parts[0])
        return real_load(fp, *args, **kwargs)

    monkeypatch.setattr(np, "load", spy)
    part = load_partition(tmp_path, 1)
    assert set(opened) == {"part1"} and len(opened) >= 8
    assert isinstance(part.x, torch.Tensor)
