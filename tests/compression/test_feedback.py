"""Error feedback and per-direction compression on one process (float64): the telescoping sum,
the rematerialisation rule (same key, same step, same bytes), commit on step(), raw messages
bypassing feedback, state through torch.save / torch.load(weights_only=True), evaluation calls
kept apart, and Wire.codec_of per direction. The multi-rank proofs (sar == sa, resume) are in
the rank cases."""
from __future__ import annotations

import io

import pytest
import torch
from torch_geometric.nn import GraphSAGE

import pyg_sar
from pyg_sar.compression import Compressor, Linear, Quantize, RandomSubset, Truncate
from pyg_sar.compression.feedback import Feedback, format_state_key, parse_state_key
from pyg_sar.compression.keys import MessageKey
from pyg_sar.core.exchange import Wire
from pyg_sar.nn.conversion.wire import layer_wire

CODECS = {"quantize": (Quantize, 8.0), "subset": (RandomSubset, 2.5)}


def _rows(seed: int, n: int = 7, c: int = 12) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, c, generator=g, dtype=torch.float64)


def _send(comp: Compressor, x: torch.Tensor, direction: str = "rows", layer: int = 0):
    """Bind, encode and decode one message as sender and receiver do; the payload and rows."""
    bound = comp.bind(layer)
    key = bound.key(0, 0, 1, direction)
    payload = bound.encode(x, key)
    return payload, bound.decode(payload, tuple(x.shape[1:]), x.dtype, key), key


@pytest.mark.parametrize("name", sorted(CODECS))
@pytest.mark.parametrize("direction", ["rows", "grads"])
def test_the_error_telescopes(name, direction):
    """sum of what arrived + the last residual == sum of what was sent (to 1e-12), and the
    error of the sum stays bounded instead of growing as without feedback."""
    codec, ratio = CODECS[name]
    comp = Compressor(codec(), ratio, seed=3, error_feedback="both")
    plain = Compressor(codec(), ratio, seed=3)
    sent = got = got_plain = 0
    for t in range(30):
        x = _rows(t)
        _, decoded, key = _send(comp, x, direction)
        _, decoded_plain, _ = _send(plain, x, direction)
        sent, got, got_plain = sent + x, got + decoded, got_plain + decoded_plain
        comp.step()
        plain.step()
    residual = comp.feedback.committed[key.state_key()]
    assert torch.allclose(got + residual, sent, rtol=0, atol=1e-12)
    assert (got - sent).norm() < 0.5 * (got_plain - sent).norm()  # about 0.15 and 0.3 here


def test_first_step_equals_no_feedback_and_residual_shape():
    """With no residual yet, the payload is the codec's own; the residual is x - decoded."""
    x = _rows(0)
    for codec, ratio in CODECS.values():
        with_ef = Compressor(codec(), ratio, seed=1, error_feedback="rows")
        payload, decoded, key = _send(with_ef, x)
        plain_payload, _, _ = _send(Compressor(codec(), ratio, seed=1), x)
        assert torch.equal(payload, plain_payload)
        assert payload.shape == plain_payload.shape and payload.dtype == plain_payload.dtype
        residual = with_ef.feedback.pending[key.state_key()]
        assert residual.shape == x.shape and torch.equal(residual, x - decoded)
        assert with_ef.feedback.nbytes() == x.numel() * 8


@pytest.mark.parametrize("name", sorted(CODECS))
def test_a_second_encode_in_a_step_sends_the_same_bytes(name):
    """The re-fetch rule: the same rows and key in one step read the same committed residual
    and give the same payload; the first encode's pending residual is kept."""
    codec, ratio = CODECS[name]
    comp = Compressor(codec(), ratio, seed=5, error_feedback="both")
    _send(comp, _rows(0))
    comp.step()
    bound = comp.bind(0)
    x = _rows(1)
    key = bound.key(0, 0, 1)
    first = bound.encode(x, key)
    pending = comp.feedback.pending[key.state_key()]
    index = torch.tensor([4, 0, 6, 1, 2, 3, 5])
    source = torch.empty_like(x).index_copy_(0, index, x)  # source[index] == x
    again = bound.encode_rows(source, index, key)
    assert torch.equal(first, again)
    assert comp.feedback.pending[key.state_key()] is pending
    plain = Compressor(codec(), ratio, seed=5)
    plain.step()
    bound_plain = plain.bind(0)
    assert not torch.equal(first, bound_plain.encode(x, bound_plain.key(0, 0, 1)))  # fed back


def test_commit_only_on_step_and_unused_keys_are_dropped():
    comp = Compressor(Quantize(), 8.0, error_feedback="both")
    _, _, key = _send(comp, _rows(0))
    _, _, other = _send(comp, _rows(1), layer=1)
    fb = comp.feedback
    assert fb.committed == {} and set(fb.pending) == {key.state_key(), other.state_key()}
    comp.step()
    assert fb.pending == {} and set(fb.committed) == {key.state_key(), other.state_key()}
    _send(comp, _rows(2))  # layer 1 sends nothing this step
    comp.step(7)
    assert set(fb.committed) == {key.state_key()}


def test_raw_messages_bypass_feedback_and_free_the_residual():
    """Ratio 1 is bit-identical to no compression (the rows themselves go), stores nothing and
    drops the residual once the schedule is lossless; rows too small to pack go raw too."""
    comp = Compressor(Quantize(), Linear(8.0, 1.0, 2), error_feedback="both")
    assert [comp.ratio(t) for t in (0, 2, 5)] == [8.0, 1.0, 1.0]
    _send(comp, _rows(0))
    comp.step()
    comp.step()
    assert comp.feedback.committed == {}  # step 1 sent nothing: its residual went
    comp.step(0)
    _send(comp, _rows(0))
    comp.step(2)
    assert len(comp.feedback.committed) == 1
    x = _rows(3)
    payload, decoded, _ = _send(comp, x)
    assert payload is x and decoded is payload and comp.feedback.pending == {}
    comp.step()
    assert comp.feedback.committed == {}
    narrow = _rows(4, c=1)  # 1 float64 value: packing it costs more than sending it
    payload, _, _ = _send(Compressor(Quantize(), 8.0, error_feedback="both"), narrow)
    assert payload is narrow


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="error_feedback='both' with Truncate"):
        Compressor(Truncate(), 4.0, error_feedback="both")
    with pytest.raises(ValueError, match=r"error_feedback must be one of .* \(got 'yes'\)"):
        Compressor(Quantize(), 4.0, error_feedback="yes")
    with pytest.raises(ValueError, match=r"directions must be one of .* \(got 'up'\)"):
        Compressor(Quantize(), 4.0, directions="up")
    with pytest.raises(ValueError, match=r"feeds back \['grads'\], which directions='rows'"):
        Compressor(Quantize(), 4.0, error_feedback="both", directions="rows")
    Compressor(Truncate(), 4.0, directions="grads")  # directions alone is fine with Truncate
    with pytest.raises(ValueError, match="non-empty subset"):
        Feedback(["up"])


def test_describe_adds_keys_only_when_not_default():
    base = {"codec": {"name": "quantize"}, "schedule": {"name": "fixed", "ratio": 4.0},
            "seed": 0}
    assert Compressor(Quantize(), 4.0).describe() == base  # old checkpoints still match
    comp = Compressor(Quantize(), 4.0, error_feedback="rows", directions="rows")
    assert comp.describe() == {**base, "error_feedback": "rows", "directions": "rows"}
    assert "error_feedback='rows'" in repr(comp) and "directions" not in repr(
        Compressor(Quantize(), 4.0))


def test_state_keys_round_trip():
    key = MessageKey(9, 4, 2, 1, 0, 3, 1, "grads")
    assert key.state_key() == (2, 1, 0, 3, 1, "grads")
    assert parse_state_key(format_state_key(key.state_key())) == key.state_key()
    for bad in ("2.1.0.3.1", "2.1.0.3.1.up", "2.x.0.3.1.rows", 5):
        with pytest.raises(ValueError, match="malformed state key"):
            parse_state_key(bad)


def _through_torch_save(state: dict) -> dict:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.mark.parametrize("name", sorted(CODECS))
def test_state_dict_round_trip_resumes_bit_identically(name):
    codec, ratio = CODECS[name]
    make = lambda: Compressor(codec(), ratio, seed=2, error_feedback="both")  # noqa: E731
    comp = make()
    for t in range(3):
        _send(comp, _rows(t))
        _send(comp, _rows(t + 10), "grads", layer=1)
        comp.step()
    _send(comp, _rows(20))  # a pending residual is saved too
    state = _through_torch_save(comp.state_dict())
    assert set(state["feedback"]) == {"0.0.0.0.1.rows", "1.0.0.0.1.grads"}
    assert set(state["pending"]) == {"0.0.0.0.1.rows"}
    resumed = make()
    resumed.load_state_dict(state)
    for c in (comp, resumed):
        _send(c, _rows(21), "grads", layer=1)
        c.step()
    a, b = _send(comp, _rows(30))[0], _send(resumed, _rows(30))[0]
    assert torch.equal(a, b)
    assert comp.feedback.pending.keys() == resumed.feedback.pending.keys()
    assert all(torch.equal(comp.feedback.pending[k], resumed.feedback.pending[k])
               for k in comp.feedback.pending)


def test_state_dict_mismatches_are_refused():
    comp = Compressor(Quantize(), 8.0, error_feedback="both")
    _send(comp, _rows(0))
    comp.step()
    state = comp.state_dict()
    with pytest.raises(ValueError, match="saved by"):
        Compressor(Quantize(), 8.0).load_state_dict(state)  # feedback on -> off
    with pytest.raises(ValueError, match="saved by"):
        comp.load_state_dict(Compressor(Quantize(), 8.0).state_dict())  # off -> on
    with pytest.raises(ValueError, match="saved by"):
        Compressor(Quantize(), 8.0, error_feedback="rows").load_state_dict(state)
    fresh = Compressor(Quantize(), 8.0, error_feedback="both")
    with pytest.raises(ValueError, match="malformed state key 'rows'"):
        fresh.load_state_dict({**state, "feedback": {"rows": torch.zeros(2, 2)}})
    with pytest.raises(ValueError, match="must be a floating-point tensor"):
        fresh.load_state_dict({**state, "feedback": {"0.0.0.0.1.rows": [1.0]}})
    with pytest.raises(ValueError, match="committed but"):
        fresh.load_state_dict({**state, "pending": {"0.0.0.0.1.rows": torch.zeros(2, 2)}})
    rows_only = Compressor(Quantize(), 8.0, error_feedback="rows")
    with pytest.raises(ValueError, match="does not feed back"):
        rows_only.load_state_dict({**rows_only.state_dict(),
                                   "feedback": {"0.0.0.0.1.grads": torch.zeros(2, 2)}})
    assert fresh.t == 0 and fresh.feedback.committed == {}  # nothing changed on refusal
    # a residual of another shape (another graph or model) is refused when it is read
    fresh.load_state_dict({**state, "feedback": {"0.0.0.0.1.rows": torch.zeros(3, 12,
                                                                             dtype=torch.float64)}})
    with pytest.raises(RuntimeError, match=r"'0.0.0.0.1.rows' is \(3, 12\)"):
        _send(fresh, _rows(1))


def test_eval_calls_touch_neither_the_state_nor_the_training_keys():
    comp = Compressor(Quantize(), 8.0, in_eval=True, error_feedback="both")
    model = GraphSAGE(4, 12, num_layers=2, out_channels=2)
    pyg_sar.convert(model, pyg_sar.SARConfig(compression=comp))
    conv = model.convs[0]
    model.train()
    wire = layer_wire(conv)
    assert wire.codec.call == 0 and wire.codec.feedback is comp.feedback
    key = wire.codec.key(0, 0, 1)
    wire.codec.encode(_rows(0), key)
    pending = dict(comp.feedback.pending)
    model.eval()
    eval_wire = layer_wire(conv)
    assert eval_wire.codec.call == 0 and eval_wire.codec.feedback is None
    eval_wire.codec.encode(_rows(1), eval_wire.codec.key(0, 0, 1))
    assert comp.feedback.pending == pending and comp.feedback.committed == {}
    model.train()
    assert layer_wire(conv).codec.call == 1  # the eval call did not shift the training keys
    model.eval()
    assert layer_wire(conv).codec.call == 1  # eval calls count apart, per step
    comp.step()
    assert layer_wire(conv).codec.call == 0
    model.train()
    assert layer_wire(conv).codec.call == 0


def test_codec_of_per_direction():
    rows_only = Compressor(Quantize(), 8.0, directions="rows").bind(0)
    wire = Wire("convs.0", rows_only)
    assert wire.codec_of(0, "rows").codec is rows_only and wire.codec_of(0) is not None
    assert wire.codec_of(0, "grads") is None
    grads_only = Wire("convs.0", Compressor(Quantize(), 8.0, directions="grads").bind(0),
                      wire_dtype=torch.bfloat16)
    assert grads_only.codec_of(0, "grads").codec is not None
    cast = grads_only.codec_of(0, "rows")  # the codec leaves rows alone, the cast does not
    assert cast.codec is None and cast.wire_dtype == torch.bfloat16
    assert Wire("convs.0", rows_only, exact=frozenset({1})).codec_of(1, "rows") is None
    with pytest.raises(ValueError, match=r"direction must be one of .* \(got 'refetch'\)"):
        wire.codec_of(0, "refetch")
