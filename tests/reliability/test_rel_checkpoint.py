"""save_checkpoint / load_checkpoint in one process: exact restore, atomic layout, refusals."""
from __future__ import annotations

import json
import pickle
import random

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

import pyg_sar
from pyg_sar.checkpoint import CheckpointError, read_latest
from pyg_sar.partition import load_partition, partition_graph


def _model(hidden: int = 8) -> torch.nn.Module:
    from torch_geometric.nn import GraphSAGE
    torch.manual_seed(0)
    return GraphSAGE(5, hidden, 2, 3).double()


def _graph(seed: int) -> Data:
    gen = torch.Generator().manual_seed(seed)
    return Data(x=torch.randn(30, 5, generator=gen),
                edge_index=torch.randint(0, 30, (2, 90), generator=gen),
                y=torch.randint(0, 3, (30,), generator=gen))


@pytest.fixture
def part(tmp_path):
    partition_graph(_graph(0), 1, tmp_path / "parts", method="random")
    return load_partition(tmp_path / "parts", 0)


def _step(model, optimizer, data) -> None:
    optimizer.zero_grad()
    out = torch.nn.functional.dropout(model(data.x.double(), data.edge_index), 0.5)
    out.sum().backward()
    optimizer.step()


def test_restores_model_optimizer_rng_and_loop_state(tmp_path, part):
    data = _graph(0)
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(3):
        _step(model, opt, data)
    torch.manual_seed(123)
    np.random.seed(5)
    random.seed(7)
    pyg_sar.save_checkpoint(tmp_path / "ck", model, opt, 3, config={"lr": 0.01},
                            partition=part, extra={"best": 0.5})
    expected_rng = (torch.rand(4), np.random.rand(2), random.random())
    for _ in range(2):
        _step(model, opt, data)
    expected = [p.detach().clone() for p in model.parameters()]

    model2 = _model(hidden=8)
    opt2 = torch.optim.Adam(model2.parameters(), lr=0.01)
    torch.manual_seed(999)
    state = pyg_sar.load_checkpoint(tmp_path / "ck", model2, opt2, partition=part)
    assert (state.epoch, state.config, state.extra) == (3, {"lr": 0.01}, {"best": 0.5})
    assert state.fingerprint == part.fingerprint
    got_rng = (torch.rand(4), np.random.rand(2), random.random())
    assert torch.equal(got_rng[0], expected_rng[0])
    assert np.array_equal(got_rng[1], expected_rng[1]) and got_rng[2] == expected_rng[2]
    for _ in range(2):
        _step(model2, opt2, data)
    for a, b in zip(expected, model2.parameters(), strict=True):
        assert torch.equal(a, b)  # bit-identical continuation


def test_layout_keeps_newest_snapshots_and_commits_last(tmp_path):
    model = _model()
    for epoch in (1, 2, 3):
        pyg_sar.save_checkpoint(tmp_path / "ck", model, None, epoch, keep=2)
    snaps = sorted(p.name for p in (tmp_path / "ck").iterdir() if p.is_dir())
    assert [s[:12] for s in snaps] == ["epoch-000002", "epoch-000003"]
    latest = read_latest(tmp_path / "ck")
    assert latest["epoch"] == 3 and latest["snapshot"] == snaps[-1]
    assert not list((tmp_path / "ck").glob("**/.*tmp*"))  # no temporary files left


def test_missing_checkpoint(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint at .*latest.json"):
        pyg_sar.load_checkpoint(tmp_path / "nothing", _model())


def test_missing_ok_returns_none_and_changes_nothing(tmp_path):
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    before = [p.detach().clone() for p in model.parameters()]
    # No folder; an empty one; a snapshot written but never committed (killed before
    # latest.json): nothing to resume from, so the run starts fresh.
    assert pyg_sar.load_checkpoint(tmp_path / "none", model, opt, missing_ok=True) is None
    (tmp_path / "empty").mkdir()
    assert pyg_sar.load_checkpoint(tmp_path / "empty", model, opt, missing_ok=True) is None
    half = tmp_path / "half" / "epoch-000005-abcd1234"
    half.mkdir(parents=True)
    (half / "rank0.pt").write_bytes(b"\x80\x02half")
    assert pyg_sar.load_checkpoint(tmp_path / "half", model, opt, missing_ok=True) is None
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert not opt.state  # the optimizer is untouched
    pyg_sar.save_checkpoint(tmp_path / "ck", model, opt, 4)
    state = pyg_sar.load_checkpoint(tmp_path / "ck", _model(), missing_ok=True)
    assert state is not None and state.epoch == 4
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "latest.json").write_text("{")
    with pytest.raises(CheckpointError, match="not valid JSON"):  # damaged is not missing
        pyg_sar.load_checkpoint(tmp_path / "bad", model, missing_ok=True)


def test_other_partition_is_refused(tmp_path, part):
    model = _model()
    pyg_sar.save_checkpoint(tmp_path / "ck", model, None, 1, partition=part)
    partition_graph(_graph(1), 1, tmp_path / "other", method="random")
    other = load_partition(tmp_path / "other", 0)
    with pytest.raises(CheckpointError, match=rf"written for partition {part.fingerprint[:12]} "
                                              rf"but this run uses partition "
                                              rf"{other.fingerprint[:12]}"):
        pyg_sar.load_checkpoint(tmp_path / "ck", model, partition=other)


def test_other_model_is_refused(tmp_path):
    pyg_sar.save_checkpoint(tmp_path / "ck", _model(hidden=8), None, 1)
    with pytest.raises(CheckpointError, match=r"different model: .*'convs.0.lin_l.weight' is "
                                              r"float64 \[8, 5\] in the checkpoint but "
                                              r"float64 \[16, 5\] in the model"):
        pyg_sar.load_checkpoint(tmp_path / "ck", _model(hidden=16))
    with pytest.raises(CheckpointError, match="float32"):
        pyg_sar.load_checkpoint(tmp_path / "ck", _model(hidden=8).float())


def test_missing_optimizer_state_is_refused(tmp_path):
    model = _model()
    pyg_sar.save_checkpoint(tmp_path / "ck", model, None, 1)
    with pytest.raises(CheckpointError, match="holds no optimizer state"):
        pyg_sar.load_checkpoint(tmp_path / "ck", model, torch.optim.SGD(model.parameters(), 0.1))


def _rank_file(root):
    return root / read_latest(root)["snapshot"] / "rank0.pt"


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_file_is_refused(tmp_path, damage):
    model = _model()
    pyg_sar.save_checkpoint(tmp_path / "ck", model, None, 1)
    file = _rank_file(tmp_path / "ck")
    data = bytearray(file.read_bytes())
    if damage == "truncate":
        data = data[:len(data) // 2]
    else:
        data[len(data) // 2] ^= 0xFF
    file.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="is damaged: its SHA-256 does not match"):
        pyg_sar.load_checkpoint(tmp_path / "ck", model)


class _Boom:
    def __reduce__(self):
        return (exec, ("import pathlib; pathlib.Path('PWNED').write_text('x')",))


def test_pickle_payload_is_never_run(tmp_path, monkeypatch):
    """A rank file carrying code (with a matching checksum) is refused, not executed."""
    import hashlib
    monkeypatch.chdir(tmp_path)
    model = _model()
    pyg_sar.save_checkpoint(tmp_path / "ck", model, None, 1)
    file = _rank_file(tmp_path / "ck")
    evil = pickle.dumps({"epoch": 1, "rank": 0, "model": _Boom()})
    file.write_bytes(evil)
    latest = json.loads((tmp_path / "ck" / "latest.json").read_text())
    latest["sha256"] = [hashlib.sha256(evil).hexdigest()]
    (tmp_path / "ck" / "latest.json").write_text(json.dumps(latest))
    with pytest.raises(CheckpointError, match="cannot be read safely"):
        pyg_sar.load_checkpoint(tmp_path / "ck", model)
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("edit,match", [
    (lambda m: "{not json", "not valid JSON"),
    (lambda m: json.dumps(dict(m, format_version=99)), "format version 99, newer"),
    (lambda m: json.dumps({k: v for k, v in m.items() if k != "sha256"}), "'sha256' missing"),
    (lambda m: json.dumps(dict(m, world_size=4)), "1 checksums for 4 ranks"),
    (lambda m: json.dumps(dict(m, snapshot="../x")), "bad snapshot name"),
])
def test_malformed_metadata(tmp_path, edit, match):
    model = _model()
    pyg_sar.save_checkpoint(tmp_path / "ck", model, None, 1)
    meta = tmp_path / "ck" / "latest.json"
    meta.write_text(edit(json.loads(meta.read_text())))
    with pytest.raises(CheckpointError, match=match):
        pyg_sar.load_checkpoint(tmp_path / "ck", model)


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match=r"epoch must be an integer >= 0 \(got -1\)"):
        pyg_sar.save_checkpoint(tmp_path, _model(), None, -1)
    with pytest.raises(ValueError, match="JSON-serialisable"):
        pyg_sar.save_checkpoint(tmp_path, _model(), None, 1, extra={"t": torch.zeros(1)})


def test_keyed_draw_counters_are_saved_and_restored(tmp_path):
    """The auto-encoders' draw counters and DGI's corruption epoch travel with the checkpoint,
    so a resumed run draws the negatives, noise and permutations the uninterrupted one would."""
    from torch_geometric.nn import GAE, DeepGraphInfomax

    from pyg_sar.checkpoint import draw_counters
    from pyg_sar.nn.autoencoder import DRAWS
    from pyg_sar.nn.infomax import corruption

    def models():
        torch.manual_seed(0)
        gae = GAE(torch.nn.Linear(4, 3))
        dgi = DeepGraphInfomax(3, encoder=torch.nn.Linear(4, 3),
                               summary=lambda z, *a, **k: z.mean(0),
                               corruption=corruption(seed=1))
        return torch.nn.ModuleDict({"gae": gae, "dgi": dgi})

    model = models()
    model["gae"].__dict__[DRAWS] = {"negatives": 7, "noise": 3}
    model["dgi"].corruption.epoch = 11
    pyg_sar.save_checkpoint(tmp_path / "ck", model, None, 2)
    fresh = models()
    assert draw_counters(fresh) == {"dgi": {"corruption_epoch": 0}}
    pyg_sar.load_checkpoint(tmp_path / "ck", fresh)
    assert draw_counters(fresh) == {"gae": {"draws": {"negatives": 7, "noise": 3}},
                                    "dgi": {"corruption_epoch": 11}}
