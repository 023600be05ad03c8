"""Rank side of the zoo: run recipes with plain PyG on the whole graph and converted on this
rank's part, and record one result per (recipe, mode) cell.

Every rank builds the same graph and the same module (seeded), runs plain PyG on the whole
graph (the oracle), then per mode converts a copy, runs it on its own rows and the DistGraph,
and compares its rows of the output (original order, through ``part.node_ids``), the gradients
of every differentiable input (node rows through ``node_ids``, stored edges through
``part.edge_ids``) and every parameter gradient after :func:`pyg_sar.all_reduce_gradients`.

Results go to a JSON-lines log per rank (``rank<r>.jsonl``), one line when a cell starts and one
when it ends, so the driver (:mod:`pyg_sar.testing.zoo`) knows what finished even when a rank is
killed. A failure inside a converted layer on several ranks can leave peers blocked or messages
in flight, so there the rank records the crash and raises: the launch stops, and the driver
starts a new one after that cell. A refusal by ``convert`` (before anything runs) and any
failure on one rank are recorded and the rank moves on.
"""
from __future__ import annotations

import copy
import json
import os
import re
import time
import traceback
from pathlib import Path
from typing import Any, Optional

import torch
from torch import Tensor
from torch_geometric.data import Data

import pyg_sar
from pyg_sar.testing.zoo_recipes import (
    EDGE_DIM,
    IN,
    NODE_TYPES,
    NUM_CLASSES,
    POS_DIM,
    RELATIONS,
    GraphInfo,
    Inputs,
    Recipe,
)

SEED = 7
NODE_INPUTS = ("x", "x_0", "pos", "normal")  # differentiable node tensors
EDGE_INPUTS = ("edge_weight", "edge_attr")  # differentiable edge tensors
_TRACE_LINES = 6


class CellCrash(RuntimeError):
    """A converted layer failed on a rank of a multi-rank launch (the launch must stop)."""

    def __init__(self, cell: dict) -> None:
        super().__init__(f"{cell['error']['type']}: {cell['error']['message']}")
        self.cell = cell


def make_graph(num_nodes: int = 60, num_edges: int = 300, seed: int = 0) -> Data:
    """Directed duplicate-free edges with some self-loops, 4 isolated nodes, and every node and
    edge tensor a recipe may take (float64)."""
    g = torch.Generator().manual_seed(seed)
    active = num_nodes - 4  # the last 4 nodes are isolated
    src = torch.randint(0, active, (num_edges,), generator=g)
    dst = torch.randint(0, active, (num_edges,), generator=g)
    loops = torch.arange(0, active, 7)
    ei = torch.cat([torch.stack([src, dst]), torch.stack([loops, loops])], dim=1)
    ei = torch.unique(ei, dim=1)
    ei = ei[:, torch.randperm(ei.shape[1], generator=g)]
    e = ei.shape[1]

    def randn(*shape: int) -> Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    return Data(
        x=randn(num_nodes, IN), x_0=randn(num_nodes, IN), pos=randn(num_nodes, POS_DIM),
        normal=torch.nn.functional.normalize(randn(num_nodes, POS_DIM), dim=-1),
        node_type=torch.randint(0, NODE_TYPES, (num_nodes,), generator=g),
        y=torch.randint(0, NUM_CLASSES, (num_nodes,), generator=g),
        train_mask=torch.rand(num_nodes, generator=g) < 0.6,
        edge_index=ei,
        edge_weight=torch.rand(e, generator=g, dtype=torch.float64) + 0.5,
        edge_attr=randn(e, EDGE_DIM),
        edge_type=torch.randint(0, RELATIONS, (e,), generator=g),
    )


def graph_info(data: Data) -> GraphInfo:
    deg = torch.bincount(data.edge_index[1], minlength=data.num_nodes)
    return GraphInfo(num_nodes=data.num_nodes, deg_histogram=torch.bincount(deg))


def _leaf(t: Tensor) -> Tensor:
    t = t.clone()
    return t.requires_grad_() if t.is_floating_point() else t


def whole_inputs(data: Data) -> Inputs:
    """Fresh leaf tensors of the whole graph (for plain PyG)."""
    return Inputs(**{k: _leaf(data[k]) for k in NODE_INPUTS + EDGE_INPUTS},
                  edge_index=data.edge_index, edge_type=data.edge_type,
                  node_type=data.node_type, y=data.y, train_mask=data.train_mask)


def local_inputs(part) -> Inputs:
    """Fresh leaf tensors of this rank's part, as a user gets them from ``load_partition``."""
    node, edge = part.node_data, part.edge_data
    return Inputs(x=_leaf(part.x), x_0=_leaf(node["x_0"]), pos=_leaf(node["pos"]),
                  normal=_leaf(node["normal"]), edge_weight=_leaf(part.edge_weight),
                  edge_attr=_leaf(part.edge_attr), edge_index=part.graph,
                  edge_type=edge["edge_type"], node_type=node["node_type"], y=part.y,
                  train_mask=part.train_mask)


def check_partition(part, data: Data) -> None:
    """The rank's tensors are the whole graph's rows (else every comparison would be moot)."""
    local = local_inputs(part)
    nid, eid = part.node_ids, part.edge_ids
    for key in NODE_INPUTS + ("node_type", "y", "train_mask"):
        if not torch.equal(getattr(local, key), data[key][nid]):
            raise RuntimeError(f"zoo: partition node tensor '{key}' differs from the graph's")
    for key in EDGE_INPUTS + ("edge_type",):
        if not torch.equal(getattr(local, key), data[key][eid]):
            raise RuntimeError(f"zoo: partition edge tensor '{key}' differs from the graph's")
    if not torch.equal(part.global_edge_index(), data.edge_index[:, eid]):
        raise RuntimeError("zoo: part.global_edge_index() differs from edge_index[:, edge_ids]")


def _rel(a: Tensor, b: Tensor) -> float:
    a, b = a.detach().double(), b.detach().double()
    if a.numel() == 0:
        return 0.0
    scale = max(float(b.abs().max()), 1e-30)
    return float((a - b).abs().max()) / scale


def _error(exc: BaseException) -> dict:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    tail = "".join(lines[-_TRACE_LINES:]) if len(lines) > _TRACE_LINES else "".join(lines)
    return {"type": type(exc).__name__, "message": str(exc), "traceback": tail}


def _run_model(recipe: Recipe, model: torch.nn.Module, inputs: Inputs) -> Tensor:
    out = recipe.call(model, inputs)
    if not isinstance(out, Tensor):
        raise TypeError(f"zoo: recipe {recipe.name} returned {type(out).__name__}, "
                        f"not a tensor")
    return out


def _backward(out: Tensor, weight: Tensor) -> None:
    if out.requires_grad:
        (out.double() * weight).sum().backward()


class Oracle:
    """Plain PyG on the whole graph: output, input gradients and parameter gradients."""

    def __init__(self, recipe: Recipe, pristine: torch.nn.Module, data: Data) -> None:
        model = copy.deepcopy(pristine)
        inputs = whole_inputs(data)
        out = _run_model(recipe, model, inputs)
        gen = torch.Generator().manual_seed(3)
        self.weight = torch.randn(out.shape, generator=gen, dtype=torch.float64)
        self.out = out.detach().clone()  # reversible models free their outputs in backward
        _backward(out, self.weight)
        self.input_grads = {k: getattr(inputs, k).grad for k in NODE_INPUTS + EDGE_INPUTS}
        self.param_grads = {n: p.grad for n, p in model.named_parameters()}


def _grad_error(got: Optional[Tensor], want: Optional[Tensor]) -> Optional[float]:
    """Relative error of a gradient; ``None`` where neither side has one."""
    if want is None and got is None:
        return None
    if want is None:
        return 0.0 if not got.any() else 1.0
    if got is None:
        return 0.0 if not want.any() else 1.0
    return _rel(got, want)


def compare(oracle: Oracle, out: Tensor, inputs: Inputs, model: torch.nn.Module, part
            ) -> dict[str, Any]:
    """Errors of this rank's output, input gradients and parameter gradients."""
    nid, eid = part.node_ids, part.edge_ids
    want = oracle.out[nid]
    if tuple(out.shape) != tuple(want.shape):
        return {"errors": {"out": 1.0},
                "notes": [f"output shape {list(out.shape)}, expected {list(want.shape)}"]}
    errors: dict[str, float] = {"out": _rel(out, want)}
    notes: list[str] = []
    for key in NODE_INPUTS + EDGE_INPUTS:
        full = oracle.input_grads[key]
        rows = None if full is None else full[nid if key in NODE_INPUTS else eid]
        err = _grad_error(getattr(inputs, key).grad, rows)
        if err is not None:
            errors[f"grad:{key}"] = err
    param_errors(oracle.param_grads, model, errors, notes, node_ids=nid)
    return {"errors": errors, "notes": notes}


def param_errors(param_grads: dict[str, Optional[Tensor]], model: torch.nn.Module,
                 errors: dict[str, float], notes: list[str],
                 node_ids: Optional[Tensor] = None) -> None:
    """Add to ``errors`` / ``notes`` how ``model``'s parameter gradients differ from
    ``param_grads`` (PyG's, by parameter name). A rank-local parameter (a sharded embedding
    table) is compared with PyG's rows ``node_ids``."""
    from pyg_sar.distributed.sync import is_rank_local
    params = dict(model.named_parameters())
    if node_ids is not None:
        param_grads = {n: g[node_ids] if g is not None and n in params
                       and is_rank_local(params[n]) else g for n, g in param_grads.items()}
    if set(params) != set(param_grads):
        notes.append(f"parameter names differ: converted {sorted(params)}, "
                     f"PyG {sorted(param_grads)}")
        errors["params"] = 1.0
    # Parameter gradients relative to the largest entry of the whole gradient: some entries are
    # zero in exact arithmetic, and rounding residue there has no meaningful relative size.
    scale = max((float(g.abs().max()) for g in param_grads.values()
                 if g is not None and g.numel()), default=0.0)
    for name, want_grad in param_grads.items():
        if name not in params:
            continue
        got = params[name].grad
        if want_grad is None or got is None:
            err = _grad_error(got, want_grad)
            if err is not None:
                errors[f"grad:{name}"] = err
        elif got.shape != want_grad.shape:
            errors[f"grad:{name}"] = 1.0
            notes.append(f"gradient of {name} has shape {list(got.shape)}")
        elif got.numel():
            errors[f"grad:{name}"] = float((got - want_grad).abs().max()) / max(scale, 1e-30)


def _names_class(message: str, names: tuple[str, ...]) -> bool:
    return any(re.search(rf"\b{re.escape(n)}\b", message) for n in names)


class Log:
    """This rank's JSON-lines record of cells (one line per event, flushed at once)."""

    def __init__(self, directory: str, rank: int) -> None:
        self._file = open(Path(directory) / f"rank{rank}.jsonl", "a", encoding="utf-8")

    def write(self, **record: Any) -> None:
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())


def convert_cell(ctx, recipe: Recipe, pristine: torch.nn.Module, mode: str
                 ) -> tuple[torch.nn.Module, Optional[dict[str, Any]]]:
    """A converted copy of ``pristine`` in ``mode``, and ``None``; or the copy and the cell that
    records why it is not (``refused`` by ``convert``, or a ``crash`` in it). Raises
    :class:`CellCrash` when the ranks came to different decisions."""
    model = copy.deepcopy(pristine)
    try:
        # The oracle's loss is a weighted sum of the outputs (each rank's part is its share),
        # not a pyg_sar global loss: the loss check is off.
        converted = pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode, check_loss=False))
    except pyg_sar.UnsupportedLayerError as exc:
        cell = {"status": "refused", "message": str(exc),
                "names_class": _names_class(str(exc), recipe.refusal_names(pristine))}
    except Exception as exc:  # noqa: BLE001 - every failure is a result
        cell = {"status": "crash", "stage": "convert", "error": _error(exc)}
    else:
        cell = None
        model = model if converted is None else converted
    if ctx.world_size > 1:
        # convert is local: every rank must come to the same decision before anything runs.
        decisions = ctx.comm.allgather_object(None if cell is None else cell["status"])
        if len(set(decisions)) > 1:
            exc = RuntimeError(f"ranks disagree at convert: {decisions}")
            raise CellCrash({"status": "crash", "stage": "convert", "error": _error(exc)})
    return model, cell


def run_cell(ctx, part, recipe: Recipe, pristine: torch.nn.Module, mode: str,
             oracle: Optional[Oracle], oracle_error: Optional[dict]) -> dict[str, Any]:
    """One (recipe, mode) cell on this rank; raises :class:`CellCrash` where the launch must
    stop."""
    def forward(model: torch.nn.Module) -> tuple[Tensor, Inputs, Tensor]:
        inputs = local_inputs(part)
        out = _run_model(recipe, model, inputs)
        return out, inputs, out.detach().clone()

    def backward(out: Tensor) -> None:
        weight = oracle.weight[part.node_ids]
        if weight.shape == out.shape:  # else compare() reports the shape
            _backward(out, weight)

    return run_converted(ctx, recipe, pristine, mode, oracle, oracle_error, forward, backward,
                         lambda out, inputs, model: compare(oracle, out, inputs, model, part))


def run_converted(ctx, recipe, pristine: torch.nn.Module, mode: str, oracle: Any,
                  oracle_error: Optional[dict], forward, backward, compare_outputs
                  ) -> dict[str, Any]:
    """One cell: convert a copy of ``pristine`` (:func:`convert_cell`), then
    ``forward(model) -> (out, inputs, out_values)``, ``backward(out)``, the gradient sum over
    ranks and ``compare_outputs(out_values, inputs, model) -> {"errors", "notes"}``; a failure
    is the cell's result (a crash in a multi-rank launch raises :class:`CellCrash`)."""
    model, cell = convert_cell(ctx, recipe, pristine, mode)
    if cell is not None:
        return cell
    if oracle is None:
        return {"status": "no_oracle", "error": oracle_error}
    stage = "forward"
    try:
        out, inputs, values = forward(model)
        stage = "backward"
        backward(out)
        stage = "all_reduce_gradients"
        pyg_sar.all_reduce_gradients(model)
    except Exception as exc:  # noqa: BLE001 - every failure is a result
        cell = {"status": "crash", "stage": stage, "error": _error(exc)}
        if ctx.world_size > 1:
            raise CellCrash(cell) from exc
        return cell
    try:
        result = compare_outputs(values, inputs, model)
    except Exception as exc:  # noqa: BLE001 - local only: no rank waits on this one
        return {"status": "crash", "stage": "compare", "error": _error(exc)}
    return {"status": "ran", **result}


def run(ctx, parts: str, cells: list, log_dir: str, recipes: str = "all") -> dict:
    """Rank target of :func:`pyg_sar.testing.run_on_ranks`: run ``cells`` = [[recipe, mode],
    ...] in order (cells of one recipe share its oracle) and log every result."""
    from pyg_sar.testing.zoo_models import recipe_table

    table = recipe_table(recipes)
    data = make_graph()
    info = graph_info(data)
    part = pyg_sar.load_partition(parts, ctx.rank)
    check_partition(part, data)

    def build(recipe: Recipe) -> torch.nn.Module:
        return recipe.make(info).double().train(recipe.train)

    def cell(recipe: Recipe, pristine, mode: str, oracle, oracle_error) -> dict:
        return run_cell(ctx, part, recipe, pristine, mode, oracle, oracle_error)

    run_cells(ctx, cells, Log(log_dir, ctx.rank), table, build,
              lambda recipe, pristine: Oracle(recipe, pristine, data), cell)
    return {"cells": len(cells)}


def run_cells(ctx, cells: list, log: Log, table: dict, build, make_oracle, run_one) -> None:
    """Run ``cells`` = [[recipe, mode], ...] in order and log every result: per recipe
    ``build(recipe)`` (seeded) and ``make_oracle(recipe, pristine)`` once (a failure of either
    is recorded for every cell), then ``run_one(recipe, pristine, mode, oracle, oracle_error)``
    per cell; a :class:`CellCrash` is logged and re-raised (the launch stops)."""
    current = None
    for name, mode in cells:
        recipe = table[name]
        log.write(event="start", recipe=name, mode=mode)
        started = time.perf_counter()
        if name != current:  # a new recipe: build it and run the oracle once
            current, pristine, oracle, oracle_error, build_error = name, None, None, None, None
            torch.manual_seed(SEED)
            try:
                pristine = build(recipe)
            except Exception as exc:  # noqa: BLE001 - recorded for every cell of the recipe
                build_error = _error(exc)
            if pristine is not None:
                try:
                    oracle = make_oracle(recipe, pristine)
                except Exception as exc:  # noqa: BLE001 - plain PyG cannot run it: recorded
                    oracle_error = _error(exc)
        if build_error is not None:
            cell = {"status": "crash", "stage": "build", "error": build_error}
        else:
            try:
                cell = run_one(recipe, pristine, mode, oracle, oracle_error)
            except CellCrash as exc:
                exc.cell["seconds"] = round(time.perf_counter() - started, 4)
                log.write(event="end", recipe=name, mode=mode, cell=exc.cell)
                raise
        cell["seconds"] = round(time.perf_counter() - started, 4)  # the oracle counts too
        log.write(event="end", recipe=name, mode=mode, cell=cell)
