"""Softmax global attention as a ring (:func:`pyg_sar.core.global_attention.ring_attention`)
against dense attention over the whole graph with autograd, float64, relative error <= 1e-10 on
the output rows and the q, k, v gradient rows of every rank.

P = 1 in this process (tiles smaller than, equal to and larger than the rows; modes sar / sa /
halo); P = 3 in one launch (unequal node ranges, a rank with no node first or in the middle,
modes sar / sa / halo), with each rank's traffic ledger equal to the formula: forward receives
``(N - n_r) C b`` and sends ``(P - 1) n_r C b`` (``C = H (d + d_v)``, ``b = 8``); mode sar's
backward fetches the same again; every mode returns ``(N - n_r) C b`` of gradients. Bad input is
refused with a message naming it.

Attention dropout (needs the native library): the reference applies the whole ``[N, H, N]``
mask of the counter-based draw (by original ids) to the normalised weights; P = 1 (three tile
sizes) and P = 3 (modes sar / sa / halo, a rank with no node) match it in output and every
gradient, so the mask is independent of P and tiles and backward redraws the forward's.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.closeness import rel_error
from tests.core import ring_attention_cases as rac

HERE = Path(__file__).resolve().parent

import pyg_sar.core.global_attention as ga  # noqa: E402
from pyg_sar.core.exchange import Wire  # noqa: E402
from pyg_sar.core.global_attention import ring_attention  # noqa: E402

TOL = 1e-10
N1 = 37
SINGLE = {f"{mode}/tile{tile}": dict(offsets=[0, N1], mode=mode, tile=tile, heads=2, d=4, dv=3)
          for mode in ("sar", "sa", "halo") for tile in (3, N1, 2 * N1, None)}
SINGLE_DROPOUT = {f"dropout/{mode}/tile{tile}": dict(offsets=[0, N1], mode=mode, tile=tile,
                                                     heads=2, d=4, dv=3, dropout=0.3)
                  for mode in ("sar", "sa", "halo") for tile in (3, N1, 2 * N1)}


def _native() -> bool:
    from pyg_sar.ops import native_available
    return native_available()


needs_native = pytest.mark.skipif(not _native(), reason="attention dropout draws its mask with "
                                  "the native library (pyg_sar.ops), not built here")
ALL3 = {**rac.CASES3, **(rac.DROPOUT_CASES3 if _native() else {})}


@pytest.mark.parametrize("name", list(SINGLE))
def test_single_process_matches_dense(name):
    case = SINGLE[name]
    got = rac.run_case(case, rac.bare_graph(0, case["offsets"]))
    worst = {k: v for k, v in got["errors"].items() if v > TOL}
    assert not worst, f"errors above {TOL}: {worst}"


def test_large_scores_do_not_overflow():
    """Scores of several hundred: the online softmax rescales, nothing overflows to inf/NaN."""
    case = dict(SINGLE["sar/tile3"])
    q, k, v, _ = rac.inputs(case)
    graph = rac.bare_graph(0, case["offsets"])
    out = ring_attention(graph, q * 300, k, v, scale=1.0, tile_rows=5)
    ref = rac.dense(q * 300, k, v, 1.0)
    assert torch.isfinite(out).all()
    assert rel_error(out, ref) <= TOL


@needs_native
@pytest.mark.parametrize("name", list(SINGLE_DROPOUT))
def test_single_process_dropout_matches_dense(name):
    case = SINGLE_DROPOUT[name]
    graph = rac.bare_graph(0, case["offsets"], node_ids=rac.original_ids(case))
    got = rac.run_case(case, graph)
    worst = {k: v for k, v in got["errors"].items() if v > TOL}
    assert not worst, f"errors above {TOL}: {worst}"


@needs_native
def test_dropout_mask_draw():
    """The draw drops about p of the weights, scales the others by 1 / (1 - p), depends on the
    seed, and p = 0 gives the undropped attention exactly."""
    case = SINGLE_DROPOUT["dropout/sar/tile3"]
    mask = rac.full_mask(case)
    kept = 1 / (1 - case["dropout"])
    assert mask.unique().tolist() == pytest.approx([0.0, kept], rel=1e-15)
    assert abs(float((mask == 0).double().mean()) - case["dropout"]) < 0.05
    from pyg_sar.core.global_attention import dropout_tile
    ids = rac.original_ids(case)
    other = dropout_tile(ids, ids, case["heads"], case["dropout"], rac.SEED + 1, torch.float64)
    assert not torch.equal(mask, other)
    q, k, v, _ = rac.inputs(case)
    graph = rac.bare_graph(0, case["offsets"], node_ids=ids)
    assert torch.equal(ring_attention(graph, q, k, v, scale=0.5, dropout=0.0, seed=3),
                       ring_attention(graph, q, k, v, scale=0.5))


@pytest.fixture(scope="module")
def launch3() -> list[dict]:
    from pyg_sar.testing import run_on_ranks
    return run_on_ranks(f"{HERE / 'ring_attention_cases.py'}:ranks", 3, timeout=180,
                        kwargs=dict(cases=list(ALL3)))


@pytest.mark.parametrize("name", list(ALL3))
def test_three_ranks_match_dense(launch3, name):
    for rank, res in enumerate(launch3):
        got = res[name]
        case = ALL3[name]
        assert got["rows"] == case["offsets"][rank + 1] - case["offsets"][rank]
        worst = {k: v for k, v in got["errors"].items() if v > TOL}
        assert not worst, f"rank {rank}: errors above {TOL}: {worst}"


def expected_traffic(case: dict, rank: int) -> dict[str, dict[str, int]]:
    """Bytes of each ledger direction for ``rank`` (float64)."""
    offsets = case["offsets"]
    world, total = len(offsets) - 1, offsets[-1]
    mine = offsets[rank + 1] - offsets[rank]
    row = case["heads"] * (case["d"] + case["dv"]) * 8
    fetch = {"sent": (world - 1) * mine * row, "recv": (total - mine) * row}
    out = {"rows": fetch, "grads": {"sent": fetch["recv"], "recv": fetch["sent"]}}
    out["refetch"] = fetch if case["mode"] == "sar" else {"sent": 0, "recv": 0}
    return out


@pytest.mark.parametrize("name", list(ALL3))
def test_traffic_equals_formula(launch3, name):
    case = ALL3[name]
    for rank, res in enumerate(launch3):
        ledger = res[name]["traffic"]
        got = {d: ledger.get(d, {"sent": 0, "recv": 0}) for d in ("rows", "refetch", "grads")}
        assert got == expected_traffic(case, rank), (rank, got)
        assert got["rows"]["recv"] > 0


def test_cases_cover_empty_rank_and_modes():
    """The P = 3 cases hold a rank with no node and all three modes (guards the suite)."""
    modes = {c["mode"] for c in rac.CASES3.values()}
    assert modes == {"sar", "sa", "halo"}
    assert any(min(b - a for a, b in zip(c["offsets"], c["offsets"][1:])) == 0
               for c in rac.CASES3.values())


def _refusal(**changes) -> str:
    case = dict(SINGLE["sar/tile3"])
    q, k, v, _ = rac.inputs(case)
    args = dict(graph=rac.bare_graph(0, case["offsets"]), q=q, k=k, v=v, scale=0.5)
    args.update(changes)
    graph = args.pop("graph")
    with pytest.raises(ValueError) as err:
        ring_attention(graph, args.pop("q"), args.pop("k"), args.pop("v"), **args)
    return str(err.value)


def test_bad_input_refused():
    q, k, v, _ = rac.inputs(SINGLE["sar/tile3"])
    assert "mode must be one of" in _refusal(mode="ring") and "'ring'" in _refusal(mode="ring")
    assert "dropout must lie in [0, 1] (got 1.5)" in _refusal(dropout=1.5)
    assert "owns 37 nodes but q has 36 rows" in _refusal(q=q[1:], k=k[1:], v=v[1:])
    assert "same shape" in _refusal(k=k[:, :, :2])
    assert "v must have q's rows and heads" in _refusal(v=v[:, :1])
    assert "[rows, heads, channels]" in _refusal(q=q[:, 0])
    assert "tile_rows" in _refusal(tile_rows=0)
    assert "depth must be a non-negative integer or None (got -1)" in _refusal(depth=-1)
    assert "scale must be finite" in _refusal(scale=float("nan"))
    assert "compressed or narrowed" in _refusal(wire=Wire(wire_dtype=torch.bfloat16))


def _saved_numbers(mode: str, n: int) -> tuple[int, int]:
    """(numbers saved for backward, largest saved tensor) of one call on ``n`` nodes, P = 1."""
    case = dict(offsets=[0, n], mode=mode, tile=8, heads=2, d=4, dv=3)
    q, k, v, _ = rac.inputs(case)
    saved: list[int] = []

    def pack(t):
        saved.append(t.numel())
        return t

    ts = [t.clone().requires_grad_() for t in (q, k, v)]
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = ring_attention(rac.bare_graph(0, case["offsets"]), *ts, scale=0.5, mode=mode,
                             tile_rows=8)
    out.sum().backward()
    return sum(saved), max(saved)


def test_ring_saves_nothing_quadratic():
    """Mode sar saves q, k, v, the output and lse: n H (2 d + 2 d_v + 1) numbers (nothing
    N x N); halo saves its n x N attention matrix."""
    n, heads, d, dv = 40, 2, 4, 3
    total, largest = _saved_numbers("sar", n)
    assert total == n * heads * (2 * d + 2 * dv + 1)
    assert largest == n * heads * d
    total_halo, largest_halo = _saved_numbers("halo", n)
    assert largest_halo >= heads * n * n


def test_bfloat16_accumulates_in_float32():
    """bf16 inputs: the output and gradients in bf16, within bf16 rounding of the float64
    reference (the online softmax accumulates in float32)."""
    case = dict(SINGLE["sar/tile3"])
    q, k, v, c = rac.inputs(case)
    graph = rac.bare_graph(0, case["offsets"])
    ref_in = [t.clone().requires_grad_() for t in (q, k, v)]
    ref = rac.dense(*ref_in, 0.5)
    (ref * c).sum().backward()
    low = [t.to(torch.bfloat16).requires_grad_() for t in (q, k, v)]
    out = ring_attention(graph, *low, scale=0.5, tile_rows=5)
    (out.double() * c).sum().backward()
    assert out.dtype == torch.bfloat16 and all(t.grad.dtype == torch.bfloat16 for t in low)
    assert rel_error(out.double(), ref.detach()) < 3e-2
    for t, r in zip(low, ref_in):
        assert rel_error(t.grad.double(), r.grad) < 5e-2


needs_fused = pytest.mark.skipif(
    ga._FLASH_CPU is None or ga._FLASH_CPU_BACKWARD is None,
    reason="needs torch's fused CPU attention (_scaled_dot_product_flash_attention_for_cpu)")


@needs_fused
@pytest.mark.parametrize("mode", ["sar", "sa"])
def test_fused_path_matches_dense_and_tiled(mode, monkeypatch):
    """d == d_v, no dropout, float64: the ring calls torch's fused kernel once per step forward
    and backward; output and gradients equal the dense reference and the tiled path (also with
    scores of several hundred)."""
    calls = {"fwd": 0, "bwd": 0}

    def counted(fn, key):
        def call(*args, **kwargs):
            calls[key] += 1
            return fn(*args, **kwargs)
        return call

    monkeypatch.setattr(ga, "_FLASH_CPU", counted(ga._FLASH_CPU, "fwd"))
    monkeypatch.setattr(ga, "_FLASH_CPU_BACKWARD", counted(ga._FLASH_CPU_BACKWARD, "bwd"))
    case = dict(offsets=[0, N1], mode=mode, tile=5, heads=3, d=4, dv=4)
    graph = rac.bare_graph(0, case["offsets"])
    got = rac.run_case(case, graph)
    assert calls == {"fwd": 1, "bwd": 1}
    worst = {k: v for k, v in got["errors"].items() if v > TOL}
    assert not worst, f"errors above {TOL}: {worst}"
    q, k, v, c = rac.inputs(case)
    for factor in (1.0, 300.0):
        grads = []
        for fused in (True, False):
            monkeypatch.setattr(ga, "USE_FUSED", fused)
            leaves = [t.clone().requires_grad_() for t in (q * factor, k, v)]
            out = ring_attention(graph, *leaves, scale=0.5, mode=mode, tile_rows=5)
            (out * c).sum().backward()
            assert torch.isfinite(out).all()
            grads.append([out.detach()] + [t.grad for t in leaves])
        assert calls["fwd"] == 1 + (2 if factor == 300.0 else 1)
        errs = [rel_error(a, b) for a, b in zip(*grads)]
        assert max(errs) <= TOL, f"fused vs tiled (scores x{factor}): {errs}"


@needs_fused
def test_fused_path_chosen_only_where_it_applies():
    """Fused: float32 / float64 with d == d_v and no dropout; tiled otherwise (d_v != d,
    dropout, bfloat16, mixed dtypes)."""
    def ok(dtype=torch.float64, dv=4, drop=None, vdtype=None):
        q = torch.zeros(3, 2, 4, dtype=dtype)
        v = torch.zeros(3, 2, dv, dtype=vdtype or dtype)
        return ga._fused_ok(q, q, v, drop)
    assert ok() and ok(torch.float32)
    assert not ok(dv=3)
    assert not ok(drop=(0.1, 0))
    assert not ok(torch.bfloat16)
    assert not ok(vdtype=torch.float32)


def test_private_flash_ops_are_used_only_with_the_signature_called():
    """torch's private fused CPU attention ops run only when their schema has the arguments
    pyg_sar passes, in order; otherwise the tiled path runs (None)."""
    from pyg_sar.core import global_attention as ga
    assert ga._FLASH_CPU is not None and ga._FLASH_CPU_BACKWARD is not None  # this torch
    name = "_scaled_dot_product_flash_attention_for_cpu"
    assert ga._private_op(name, ("query", "key", "value", "dropout_p", "is_causal",
                                 "attn_mask", "scale")) is ga._FLASH_CPU
    assert ga._private_op(name, ("query", "key", "value", "is_causal", "dropout_p",
                                 "attn_mask", "scale")) is None  # reordered
    assert ga._private_op("no_such_op_in_aten", ()) is None
