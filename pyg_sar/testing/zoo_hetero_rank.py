"""Rank side of the heterogeneous zoo: run each recipe with plain PyG on the whole HeteroData
and converted on this rank's :class:`pyg_sar.HeteroPartition`, one result per (recipe, mode).

Per recipe every rank builds the same model (seeded, lazy parameters initialised on the whole
graph) and runs the oracle once: PyG's output per node type, the gradients of every node type's
``x`` and every edge type's ``edge_attr`` and every parameter gradient for the loss
``sum_t (out[t] * w[t]).sum()``. Per mode it converts a copy and compares this rank's rows of
every node type's output (original order, through ``node_ids_dict``), its input gradients (node
rows through ``node_ids_dict``, stored edges through ``edge_ids_dict``) and the parameter
gradients after :func:`pyg_sar.all_reduce_gradients`. The logging, crash and refusal handling
are :mod:`pyg_sar.testing.zoo_rank`'s.
"""
from __future__ import annotations

import copy
from typing import Any, Optional

import torch
from torch import Tensor
from torch_geometric.data import HeteroData

import pyg_sar
from pyg_sar.testing.zoo_hetero_recipes import (
    HETERO_RECIPES,
    HeteroInputs,
    HeteroRecipe,
    make_hetero_graph,
    whole_inputs,
)
from pyg_sar.testing.zoo_rank import (
    Log,
    _grad_error,
    _rel,
    param_errors,
    run_cells,
    run_converted,
)


def _leaf(t: Tensor) -> Tensor:
    return t.detach().double().clone().requires_grad_()


def local_inputs(part) -> HeteroInputs:
    """Fresh leaf tensors of this rank's part, and its typed homogeneous view."""
    graph, node_type, edge_type = part.to_homogeneous()
    etype, pos = part.homogeneous_edge_map()
    if not torch.equal(etype, edge_type):
        raise RuntimeError("zoo: homogeneous_edge_map() disagrees with to_homogeneous()")
    return HeteroInputs(
        x_dict={t: _leaf(v) for t, v in part.x_dict.items()},
        edge_index_dict=dict(part.edge_index_dict),
        edge_attr_dict={et: _leaf(v) for et, v in part.edge_attr_dict.items()},
        graph=graph, node_type=node_type, edge_type=edge_type, edge_pos=pos,
        edge_types=list(part.edge_types))


def check_partition(part, data: HeteroData) -> None:
    """The rank's tensors are the whole graph's rows (else every comparison would be moot)."""
    if part.metadata() != data.metadata():
        raise RuntimeError(f"zoo: partition metadata {part.metadata()} differs from "
                           f"{data.metadata()}")
    for t in data.node_types:
        if not torch.equal(part.x_dict[t], data[t].x[part.node_ids_dict[t]]):
            raise RuntimeError(f"zoo: partition x of node type {t!r} differs from the graph's")
    if set(part.edge_attr_dict) != set(data.edge_attr_dict):
        raise RuntimeError(f"zoo: partition edge_attr types {sorted(part.edge_attr_dict)} "
                           f"differ from {sorted(data.edge_attr_dict)}")
    for et, attr in part.edge_attr_dict.items():
        if not torch.equal(attr, data[et].edge_attr[part.edge_ids_dict[et]]):
            raise RuntimeError(f"zoo: partition edge_attr of {et} differs from the graph's")


def _outputs(recipe: HeteroRecipe, model: torch.nn.Module, inputs: HeteroInputs
             ) -> dict[str, Tensor]:
    out = recipe.call(model, inputs)
    if not isinstance(out, dict):
        raise TypeError(f"zoo: recipe {recipe.name} returned {type(out).__name__}, not a dict")
    return {t: v for t, v in out.items() if v is not None}


def _backward(out: dict[str, Tensor], weights: dict[str, Tensor]) -> None:
    terms = [(v * weights[t]).sum() for t, v in out.items()
             if v.requires_grad and t in weights and weights[t].shape == v.shape]
    if terms:
        torch.stack(terms).sum().backward()


class HeteroOracle:
    """Plain PyG on the whole HeteroData: outputs, input and parameter gradients."""

    def __init__(self, recipe: HeteroRecipe, pristine: torch.nn.Module, data: HeteroData
                 ) -> None:
        model = copy.deepcopy(pristine)
        inputs = whole_inputs(data)
        out = _outputs(recipe, model, inputs)
        self.weights = {t: torch.randn(v.shape, dtype=torch.float64,
                                       generator=torch.Generator().manual_seed(3 + i))
                        for i, (t, v) in enumerate(sorted(out.items()))}
        self.out = {t: v.detach().clone() for t, v in out.items()}
        _backward(out, self.weights)
        self.x_grads = {t: v.grad for t, v in inputs.x_dict.items()}
        self.edge_grads = {et: v.grad for et, v in inputs.edge_attr_dict.items()}
        self.param_grads = {n: p.grad for n, p in model.named_parameters()}


def compare(oracle: HeteroOracle, out: dict[str, Tensor], inputs: HeteroInputs,
            model: torch.nn.Module, part) -> dict[str, Any]:
    """Errors of this rank's outputs, input gradients and parameter gradients."""
    errors: dict[str, float] = {}
    notes: list[str] = []
    if set(out) != set(oracle.out):
        notes.append(f"output node types {sorted(out)}, expected {sorted(oracle.out)}")
        errors["node_types"] = 1.0
    for t, want in oracle.out.items():
        if t not in out:
            continue
        want = want[part.node_ids_dict[t]]
        if tuple(out[t].shape) != tuple(want.shape):
            errors[f"out:{t}"] = 1.0
            notes.append(f"output of {t!r} has shape {list(out[t].shape)}, expected "
                         f"{list(want.shape)}")
        else:
            errors[f"out:{t}"] = _rel(out[t], want)
    for t, full in oracle.x_grads.items():
        rows = None if full is None else full[part.node_ids_dict[t]]
        err = _grad_error(inputs.x_dict[t].grad, rows)
        if err is not None:
            errors[f"grad:x[{t}]"] = err
    for et, full in oracle.edge_grads.items():
        rows = None if full is None else full[part.edge_ids_dict[et]]
        err = _grad_error(inputs.edge_attr_dict[et].grad, rows)
        if err is not None:
            errors[f"grad:edge_attr[{'__'.join(et)}]"] = err
    param_errors(oracle.param_grads, model, errors, notes)
    return {"errors": errors, "notes": notes}


def run_cell(ctx, part, recipe: HeteroRecipe, pristine: torch.nn.Module, mode: str,
             oracle: Optional[HeteroOracle], oracle_error: Optional[dict]) -> dict[str, Any]:
    """One (recipe, mode) cell on this rank; raises
    :class:`~pyg_sar.testing.zoo_rank.CellCrash` where the launch must stop."""
    def forward(model: torch.nn.Module) -> tuple[dict, HeteroInputs, dict]:
        inputs = local_inputs(part)
        out = _outputs(recipe, model, inputs)
        return out, inputs, {t: v.detach().clone() for t, v in out.items()}

    def backward(out: dict[str, Tensor]) -> None:
        _backward(out, {t: w[part.node_ids_dict[t]] for t, w in oracle.weights.items()})

    return run_converted(ctx, recipe, pristine, mode, oracle, oracle_error, forward, backward,
                         lambda out, inputs, model: compare(oracle, out, inputs, model, part))


def run(ctx, parts: str, cells: list, log_dir: str, recipes: str = "hetero") -> dict:
    """Rank target of :func:`pyg_sar.testing.run_on_ranks`: run ``cells`` = [[recipe, mode],
    ...] of :data:`HETERO_RECIPES` in order and log every result (``recipes`` is unused: the
    driver's signature)."""
    table = {rec.name: rec for rec in HETERO_RECIPES}
    data = make_hetero_graph()
    part = pyg_sar.load_partition(parts, ctx.rank)
    check_partition(part, data)

    def cell(recipe: HeteroRecipe, pristine, mode: str, oracle, oracle_error) -> dict:
        return run_cell(ctx, part, recipe, pristine, mode, oracle, oracle_error)

    run_cells(ctx, cells, Log(log_dir, ctx.rank), table, lambda recipe: recipe.make(data),
              lambda recipe, pristine: HeteroOracle(recipe, pristine, data), cell)
    return {"cells": len(cells)}
