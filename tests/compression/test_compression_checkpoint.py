"""The compressors' step state in checkpoints (one process): restored exactly, refused when the
model's compression differs from the checkpoint's."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.nn import GraphSAGE

import pyg_sar
from pyg_sar.checkpoint import CheckpointError
from pyg_sar.compression import Compressor, Quantize, Truncate, all_but_last, varco


def _model(compression) -> torch.nn.Module:
    torch.manual_seed(0)
    model = GraphSAGE(5, 8, 3, 3).double()
    return pyg_sar.convert(model, pyg_sar.SARConfig(compression=compression))


def _comp(codec=None) -> Compressor:
    return Compressor(codec or Truncate(), varco(32.0, 1.0, 5.0, 50), seed=3)


def test_schedule_state_is_saved_and_restored(tmp_path):
    comp = _comp()
    model = _model(all_but_last(comp))
    comp.step(17)
    comp.bind(1)  # a call bound within the step is part of the state too
    pyg_sar.save_checkpoint(tmp_path / "ck", model, None, 17)

    fresh = _comp()
    pyg_sar.load_checkpoint(tmp_path / "ck", _model(all_but_last(fresh)))
    assert fresh.t == 17 and fresh.ratio() == comp.ratio()
    assert fresh.bind(1) == comp.bind(1)  # the next call gets the same key


@pytest.mark.parametrize("saved,resumed,match", [
    (lambda: all_but_last(_comp()), lambda: None, r"compression state for layers \['convs.0'\] "
                                                   r"but the model compresses \[\]"),
    (lambda: None, lambda: _comp(), r"compression state for layers \[\] but the model "
                                    r"compresses \['convs.0'\]"),
    (lambda: _comp(), lambda: _comp(Quantize()), r"layer 'convs.0' was compressed with"),
    (lambda: _comp(), lambda: Compressor(Truncate(), 4.0, seed=3), "was compressed with"),
])
def test_other_compression_is_refused(tmp_path, saved, resumed, match):
    pyg_sar.save_checkpoint(tmp_path / "ck", _model(saved()), None, 2)
    model = _model(resumed())
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    changed = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(CheckpointError, match=match):
        pyg_sar.load_checkpoint(tmp_path / "ck", model)
    # refused before anything was loaded
    assert all(torch.equal(changed[k], v) for k, v in model.state_dict().items())
    assert any(not torch.equal(before[k], changed[k]) for k in before)
