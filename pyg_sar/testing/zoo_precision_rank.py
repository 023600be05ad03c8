"""Rank side of the bf16 zoo: every recipe in float32, under bf16 autocast and in pure bf16,
single-process PyG on the whole graph and converted on this rank's part.

Per recipe every rank builds the module in float32 (seeded as the float64 zoo does) and runs
plain PyG in float32 on the whole graph (the oracle). Per cell (a mode and a precision variant,
:data:`VARIANTS`) it converts a copy, runs it on its rows under that precision, back-propagates
the oracle's weighted sum and all-reduces the parameter gradients. Its distance from the oracle
is summed over the ranks (squared differences and squared oracle values of its output rows and
input-gradient rows), so the distance of a P-rank run is the relative error of the whole
graph's output, exactly as for one process. In the pure bf16 variant the converted module is
cast after ``convert`` (``pyg_sar.convert(model).bfloat16()``) and given bf16 inputs. Rank 0
also runs single-process PyG in the same precision on the graph and on perturbed copies of it
(the baseline, :func:`baseline`; read from the launch's baselines file when an earlier launch
computed it) and records both sides' distances; see :mod:`pyg_sar.testing.zoo_precision` for
the criterion.

The log format and the crash protocol are the float64 zoo's (:mod:`pyg_sar.testing.zoo_rank`).
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import torch
from torch import Tensor
from torch_geometric.data import Data

import pyg_sar
from pyg_sar.testing.zoo_rank import (
    EDGE_INPUTS,
    NODE_INPUTS,
    SEED,
    CellCrash,
    Log,
    _error,
    _run_model,
    check_partition,
    convert_cell,
    graph_info,
    local_inputs,
    make_graph,
    whole_inputs,
)
from pyg_sar.testing.zoo_recipes import Inputs, Recipe

VARIANTS = ("autocast", "bf16")  # torch.autocast(bfloat16) around forward / model.bfloat16()
GRAPH_NODES, GRAPH_EDGES = 60, 300  # the float64 zoo's graph
PARAM_SCALE_FLOOR = 2.0 ** -6  # a parameter gradient's reference: >= this x all of them
STRUCTURAL_ZERO = 1e-5  # float32 residue of a gradient that is zero in exact arithmetic
JITTER = 2.0 ** -8  # relative size of the perturbation of PyG's other baselines (one bf16 u)
PERTURBED_SEEDS = (11, 12, 13)  # one perturbed graph each
# Recipes with a tensor so ill-conditioned in bf16 that 3 perturbed graphs under-sample PyG's
# own spread: their baseline takes 20 (the same criterion, a larger sample of PyG's spread).
ILL_CONDITIONED: dict[str, str] = {
    "Polynormer[qk_shared]": (
        "queries are the keys (one sigmoid feeds both sides of the kernel), so the gradient of "
        "global_attn.0.h_lins.weight sums two bf16-rounded paths: PyG's own distance over 20 "
        "perturbed graphs ranges 0.017 to 0.127, pyg_sar's is 0.018 (P = 3, sar) to 0.131 "
        "(P = 1, sar)"),
    "GENConv[mean_msg_norm]": (
        "MessageNorm normalises the mean of relu(x_j) + eps; where a node's aggregate is "
        "small its gradient amplifies the bf16 rounding of the aggregate (pyg_sar's aggregate "
        "is closer to float32, 0.0027 vs 0.0030, yet lands elsewhere): PyG's own distance of "
        "grad:lin_src.weight over 20 perturbed graphs ranges 0.006 to 0.164, pyg_sar's is "
        "0.165 to 0.174"),
}
PERTURBED_SEEDS_ILL = tuple(range(11, 31))


def make_graph_f32() -> Data:
    """The float64 zoo's graph with every floating tensor cast to float32."""
    data = make_graph(GRAPH_NODES, GRAPH_EDGES)
    for key, value in data.items():
        if isinstance(value, Tensor) and value.is_floating_point():
            data[key] = value.float()
    return data


@contextlib.contextmanager
def precision(variant: str) -> Iterator[None]:
    """The context the forward runs in: bf16 autocast, or nothing (float32 / pure bf16)."""
    if variant == "autocast":
        with torch.autocast("cpu", dtype=torch.bfloat16):
            yield
    else:
        yield


def prepare(model: torch.nn.Module, inputs: Inputs, variant: str
            ) -> tuple[torch.nn.Module, Inputs]:
    """Model and fresh leaf inputs of ``variant`` (pure bf16: both cast with ``.bfloat16()``)."""
    if variant != "bf16":
        return model, inputs

    def cast(value: Any) -> Any:
        if isinstance(value, Tensor) and value.is_floating_point():
            return value.detach().bfloat16().requires_grad_()
        return value

    fields = {f.name: cast(getattr(inputs, f.name)) for f in dataclasses.fields(inputs)}
    return model.bfloat16(), Inputs(**fields)


def _backward(out: Tensor, weight: Tensor) -> None:
    if out.requires_grad:
        (out.float() * weight).sum().backward()


class WholeRun:
    """Plain PyG on the whole graph in one precision: output, input and parameter gradients."""

    def __init__(self, recipe: Recipe, pristine: torch.nn.Module, data: Data, variant: str,
                 weight: Optional[Tensor] = None) -> None:
        model, inputs = prepare(copy.deepcopy(pristine), whole_inputs(data), variant)
        with precision(variant):
            out = _run_model(recipe, model, inputs)
        if weight is None:
            gen = torch.Generator().manual_seed(3)
            weight = torch.randn(out.shape, generator=gen, dtype=torch.float32)
        self.weight = weight
        self.out = out.detach().clone()
        _backward(out, weight)
        self.input_grads = {k: getattr(inputs, k).grad for k in NODE_INPUTS + EDGE_INPUTS}
        self.param_grads = {n: p.grad for n, p in model.named_parameters()}


def _sq(t: Optional[Tensor]) -> float:
    return 0.0 if t is None else float(t.detach().double().pow(2).sum())


def _sums(got: Optional[Tensor], want: Optional[Tensor]) -> Optional[list[float]]:
    """[squared norm of the difference, squared norm of the reference]; ``None`` where
    neither side has a tensor."""
    if got is None and want is None:
        return None
    if got is None or want is None:
        return [_sq(got if want is None else want), 0.0]
    if got.shape != want.shape:
        return [math.inf, 0.0]
    return [_sq(got.detach().double() - want.detach().double()), _sq(want)]


def row_sums(oracle: WholeRun, out: Tensor, grads: dict[str, Optional[Tensor]], part=None
             ) -> dict[str, list[float]]:
    """Squared sums of the output and the input gradients ``grads`` on these rows (``part``:
    the rank's rows of the whole graph; ``None``: the whole graph)."""
    nid = None if part is None else part.node_ids
    eid = None if part is None else part.edge_ids

    def rows(t: Optional[Tensor], idx: Optional[Tensor]) -> Optional[Tensor]:
        return t if t is None or idx is None else t[idx]

    sums = {"out": _sums(out, rows(oracle.out, nid))}
    for key in NODE_INPUTS + EDGE_INPUTS:
        want = rows(oracle.input_grads[key], nid if key in NODE_INPUTS else eid)
        sums[f"grad:{key}"] = _sums(grads[key], want)
    return {k: v for k, v in sums.items() if v is not None}


def param_sums(oracle: WholeRun, grads: dict[str, Optional[Tensor]],
               skip: frozenset = frozenset()) -> dict[str, list[float]]:
    """Squared sums of every parameter gradient (identical on every rank after the
    all-reduce). A parameter's reference is its own gradient, at least
    :data:`PARAM_SCALE_FLOOR` of all parameter gradients together (a gradient much smaller
    than the rest has no meaningful relative size); a gradient that is zero in exact arithmetic
    (below :data:`STRUCTURAL_ZERO` of all of them in float32, e.g. the bias of a layer followed
    by a batch norm) is measured against all of them, as the float64 zoo measures every
    parameter: both sides' bf16 results there are rounding residue, to be small, not
    close. Parameters named in ``skip`` (rank-local tables, compared by rows in
    :func:`local_param_sums`) are left out."""
    total = sum(_sq(g) for g in oracle.param_grads.values())
    sums = {}
    for name in sorted((set(grads) | set(oracle.param_grads)) - skip):
        if name not in grads or name not in oracle.param_grads:
            pair: Optional[list[float]] = [math.inf, 0.0]  # a parameter only one side has
        else:
            pair = _sums(grads[name], oracle.param_grads[name])
        if pair is not None:
            zero = pair[1] <= STRUCTURAL_ZERO ** 2 * total
            least = (1.0 if zero else PARAM_SCALE_FLOOR ** 2) * total
            sums[f"grad:{name}"] = [pair[0], max(pair[1], least)]
    return sums


def local_param_sums(oracle: WholeRun, model: torch.nn.Module, part) -> dict[str, list[float]]:
    """Squared sums of the gradients of rank-local parameters (a sharded embedding table: the
    rank's rows of PyG's table, ``part.node_ids``), summed over ranks like the row sums."""
    from pyg_sar.distributed.sync import is_rank_local
    sums = {}
    for name, param in model.named_parameters():
        if is_rank_local(param):
            want = oracle.param_grads.get(name)
            pair = _sums(param.grad, None if want is None else want[part.node_ids])
            if pair is not None:
                sums[f"grad:{name}"] = pair
    return sums


def distances(sums: dict[str, list[float]]) -> dict[str, float]:
    """Relative L2 distance per key: ||got - want|| / ||want|| (0 where both are zero,
    infinite where only the reference is)."""
    out = {}
    for key, (diff, ref) in sums.items():
        if diff == 0.0:
            out[key] = 0.0
        elif ref == 0.0:
            out[key] = math.inf
        else:
            out[key] = math.sqrt(diff / ref)
    return out


@dataclasses.dataclass(frozen=True)
class Perturbed:
    """The graph with its nodes relabelled, its edges reordered and every floating input
    multiplied by ``1 + JITTER * r``, ``r`` uniform in [-1, 1] (one bf16 rounding of the
    input): a graph that bf16 cannot tell from the original, with other summation orders.
    ``data`` and the permutations (new position -> old index)."""

    data: Data
    node_perm: Tensor
    edge_perm: Tensor

    @staticmethod
    def of(data: Data, seed: int = 11) -> Perturbed:
        g = torch.Generator().manual_seed(seed)
        n, e = data.num_nodes, data.edge_index.size(1)
        node_perm, edge_perm = torch.randperm(n, generator=g), torch.randperm(e, generator=g)
        new_id = torch.empty_like(node_perm)
        new_id[node_perm] = torch.arange(n)
        out = data.clone()
        out.edge_index = new_id[data.edge_index[:, edge_perm]]
        for keys, perm in ((NODE_INPUTS + ("node_type", "y", "train_mask"), node_perm),
                           (EDGE_INPUTS + ("edge_type",), edge_perm)):
            for key in keys:
                value = data[key][perm]
                if value.is_floating_point():
                    r = torch.rand(value.shape, generator=g, dtype=value.dtype) * 2 - 1
                    value = value * (1 + JITTER * r)
                out[key] = value
        return Perturbed(out, node_perm, edge_perm)

    def restore(self, t: Optional[Tensor], edges: bool = False) -> Optional[Tensor]:
        """Rows of a result on the perturbed graph back in the original order."""
        if t is None:
            return None
        perm = self.edge_perm if edges else self.node_perm
        out = torch.empty_like(t)
        out[perm] = t
        return out


def whole_distances(recipe: Recipe, pristine: torch.nn.Module, data: Data, oracle: WholeRun,
                    variant: str, perturbed: Optional[Perturbed] = None) -> dict[str, Any]:
    """Single-process PyG in ``variant`` (on the perturbed graph where given): its distances,
    or the error it raised."""
    try:
        if perturbed is None:
            run = WholeRun(recipe, pristine, data, variant, oracle.weight)
            out, grads = run.out, run.input_grads
        else:
            run = WholeRun(recipe, pristine, perturbed.data, variant,
                           oracle.weight[perturbed.node_perm])
            out = perturbed.restore(run.out)
            grads = {k: perturbed.restore(g, edges=k in EDGE_INPUTS)
                     for k, g in run.input_grads.items()}
        sums = row_sums(oracle, out, grads)
        sums.update(param_sums(oracle, run.param_grads))
    except Exception as exc:  # noqa: BLE001 - plain PyG failing in bf16 is a result
        return {"error": _error(exc)}
    return {"distances": distances(sums), "dtype": str(run.out.dtype)}


def baseline(recipe: Recipe, pristine: torch.nn.Module, data: Data, oracle: WholeRun,
             variant: str, perturbed: tuple[Perturbed, ...]) -> dict[str, Any]:
    """PyG's distances in ``variant``: per tensor the largest of PyG on the graph and PyG on
    each perturbed graph (its spread under other summation orders and one bf16 rounding of
    the inputs: near a kink, e.g. a ReLU input within rounding of 0, that spread is what any
    other bf16 computation may land on), all recorded."""
    plain = whole_distances(recipe, pristine, data, oracle, variant)
    if "error" in plain:
        return plain
    spread = dict(plain["distances"])
    others = []
    for graph in perturbed:
        other = whole_distances(recipe, pristine, data, oracle, variant, graph)
        if "error" in other:
            return {**plain, "perturbed_error": other["error"]}
        others.append(other["distances"])
        for key, value in other["distances"].items():
            spread[key] = max(spread.get(key, 0.0), value)
    return {"distances": spread, "dtype": plain["dtype"], "plain": plain["distances"],
            "perturbed": others}


def run_cell(ctx, part, recipe: Recipe, pristine: torch.nn.Module, mode: str, variant: str,
             oracle: Optional[WholeRun], baseline: Optional[dict],
             oracle_error: Optional[dict] = None, skip_run: bool = False) -> dict[str, Any]:
    """One (recipe, mode, variant) cell on this rank; raises :class:`CellCrash` where the
    launch must stop. ``skip_run``: convert only (a refusal is still recorded), status
    ``not_run``."""
    model, cell = convert_cell(ctx, recipe, pristine, mode)
    if cell is not None:
        return cell
    if oracle is None:
        return {"status": "no_oracle", "error": oracle_error}
    if skip_run:
        return {"status": "not_run", "reason": "single-process PyG raises in this precision"}
    stage = "cast"
    try:
        model, inputs = prepare(model, local_inputs(part), variant)
        stage = "forward"
        with precision(variant):
            out = _run_model(recipe, model, inputs)
        out_value = out.detach().clone()
        stage = "backward"
        weight = oracle.weight[part.node_ids]
        if weight.shape == out.shape:  # else the output's distance is infinite
            _backward(out, weight)
        stage = "all_reduce_gradients"
        pyg_sar.all_reduce_gradients(model)
    except Exception as exc:  # noqa: BLE001 - every failure is a result
        cell = {"status": "crash", "stage": stage, "error": _error(exc)}
        if ctx.world_size > 1:
            raise CellCrash(cell) from exc
        return cell
    try:
        mine: Any = row_sums(oracle, out_value,
                             {k: getattr(inputs, k).grad for k in NODE_INPUTS + EDGE_INPUTS},
                             part)
        local = local_param_sums(oracle, model, part)
        mine.update(local)
        params = param_sums(oracle, {n: p.grad for n, p in model.named_parameters()},
                            skip=frozenset(key[len("grad:"):] for key in local))
    except Exception as exc:  # noqa: BLE001 - reported after the gather below
        mine, params = _error(exc), {}
    every = ctx.comm.allgather_object(mine) if ctx.world_size > 1 else [mine]
    failed = [r for r in every if "type" in r]
    if failed:
        return {"status": "crash", "stage": "compare", "error": failed[0]}
    total: dict[str, list[float]] = {}
    for sums in every:
        for key, (diff, ref) in sums.items():
            acc = total.setdefault(key, [0.0, 0.0])
            acc[0] += diff
            acc[1] += ref
    total.update(params)
    return {"status": "ran", "distances": distances(total), "dtype": str(out_value.dtype),
            "pyg": baseline}


def _load_baselines(path: Optional[str]) -> dict[tuple[str, str], dict]:
    known: dict[tuple[str, str], dict] = {}
    if path and Path(path).exists():
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut off by a killed rank
            known[(record["recipe"], record["variant"])] = record["baseline"]
    return known


def run(ctx, parts: str, cells: list, log_dir: str, recipes: str = "all",
        baselines: Optional[str] = None) -> dict:
    """Rank target of :func:`pyg_sar.testing.run_on_ranks`: run ``cells`` = [[recipe,
    "mode:variant"], ...] in order (cells of one recipe share its oracle) and log every
    result. ``baselines``: a JSON-lines file of PyG's baselines (single-process, so the same
    for every P): rank 0 takes those it finds there and appends those it computes."""
    from pyg_sar.testing.zoo_models import recipe_table

    known = _load_baselines(baselines) if ctx.rank == 0 else {}
    store = open(baselines, "a", encoding="utf-8") if baselines and ctx.rank == 0 else None

    table = recipe_table(recipes)
    data = make_graph_f32()
    perturbed = tuple(Perturbed.of(data, seed) for seed in PERTURBED_SEEDS_ILL)
    info = graph_info(data)
    part = pyg_sar.load_partition(parts, ctx.rank)
    check_partition(part, data)
    log = Log(log_dir, ctx.rank)
    current = None
    for name, key in cells:
        mode, variant = key.split(":")
        recipe = table[name]
        log.write(event="start", recipe=name, mode=key)
        started = time.perf_counter()
        if name != current:  # a new recipe: build it and run the float32 oracle once
            current, pristine, oracle, baselines, pyg_fails = name, None, None, {}, {}
            build_error, oracle_error = None, None
            torch.manual_seed(SEED)
            try:
                pristine = recipe.make(info).float().train(recipe.train)
            except Exception as exc:  # noqa: BLE001 - recorded for every cell of the recipe
                build_error = _error(exc)
            if pristine is not None:
                try:
                    oracle = WholeRun(recipe, pristine, data, "float32")
                except Exception as exc:  # noqa: BLE001 - plain PyG cannot run it: recorded
                    oracle_error = _error(exc)
        if build_error is not None:
            cell = {"status": "crash", "stage": "build", "error": build_error}
        else:
            if oracle is not None and variant not in baselines:
                base = None
                if ctx.rank == 0:
                    base = known.get((name, variant))
                    if base is None:
                        seeds = PERTURBED_SEEDS_ILL if name in ILL_CONDITIONED \
                            else PERTURBED_SEEDS
                        base = baseline(recipe, pristine, data, oracle, variant,
                                        perturbed[:len(seeds)])
                        if store is not None:
                            store.write(json.dumps({"recipe": name, "variant": variant,
                                                    "baseline": base}) + "\n")
                            store.flush()
                # Where PyG itself raises, a multi-rank launch does not run the converted
                # copy (P = 1 does): a crash there would cost a launch and prove nothing.
                fails = "error" in base if ctx.rank == 0 else None
                if ctx.world_size > 1:
                    fails = ctx.comm.allgather_object(fails)[0]
                baselines[variant], pyg_fails[variant] = base, fails
            try:
                cell = run_cell(ctx, part, recipe, pristine, mode, variant, oracle,
                                baselines.get(variant), oracle_error,
                                skip_run=ctx.world_size > 1 and bool(pyg_fails.get(variant)))
            except CellCrash as exc:
                exc.cell["pyg"] = baselines.get(variant)
                exc.cell["seconds"] = round(time.perf_counter() - started, 4)
                log.write(event="end", recipe=name, mode=key, cell=exc.cell)
                raise
        cell.setdefault("pyg", baselines.get(variant))
        cell["seconds"] = round(time.perf_counter() - started, 4)
        log.write(event="end", recipe=name, mode=key, cell=cell)
    if store is not None:
        store.close()
    return {"cells": len(cells)}
