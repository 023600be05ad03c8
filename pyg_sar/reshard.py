"""Checkpoint state written by P ranks, rebuilt for this rank of a job of another size.

A converted model's parameters and optimizer state are the same on every rank (gradients are
summed, rank 0's values broadcast), so any rank file holds them; only rank-local tables
(:func:`pyg_sar.shard_embedding`) differ: each rank file holds its rank's rows, with their
original node ids. :func:`reshard` takes the shared state from rank file 0 and assembles every
rank-local table (and the optimizer state of its rows) for the node ids this rank holds now,
so a job continues on P' ranks from the checkpoint of P (e.g. 4 -> 2 after losing a host).
"""
from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor


class ReshardError(ValueError):
    """The saved state cannot be rebuilt for this rank (the message names what is missing)."""


def rank_local_ids(model: torch.nn.Module) -> dict[str, Tensor]:
    """``state_dict name -> original node ids of its rows`` for every rank-local table."""
    from pyg_sar.nn.embedding import SHARD_IDS, rank_local_names
    modules = dict(model.named_modules())
    params = dict(model.named_parameters(remove_duplicate=False))
    found = {}
    for name in sorted(rank_local_names(model)):
        owner = modules.get(name.rpartition(".")[0])
        ids = getattr(params[name], SHARD_IDS, None)
        if ids is None and owner is not None:
            ids = getattr(owner, SHARD_IDS, None)
        if ids is not None:
            found[name] = ids.detach().cpu()
    return found


def _row_positions(name: str, want: Tensor, ids: list[Tensor]) -> Tensor:
    """Where each id of ``want`` sits in the per-rank rows keyed by ``ids``, concatenated (one
    search per table, applied to its rows and to every optimizer state of them)."""
    all_ids = torch.cat(ids)
    order = torch.argsort(all_ids)
    sorted_ids = all_ids[order]
    if want.numel() and sorted_ids.numel() == 0:
        raise ReshardError(f"rank-local table '{name}': the checkpoint holds no rows")
    at = torch.searchsorted(sorted_ids, want).clamp_(max=max(sorted_ids.numel() - 1, 0))
    bad = sorted_ids[at] != want if want.numel() else torch.zeros(0, dtype=torch.bool)
    if bool(bad.any()):
        raise ReshardError(f"rank-local table '{name}': node id {int(want[bad][0])} has no row "
                           f"in the checkpoint (was it written for another graph?)")
    return order[at]


def _param_names(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> list[str]:
    """The model's name of each parameter in the optimizer's order (its state_dict indices)."""
    by_id = {id(p): n for n, p in model.named_parameters()}
    names = []
    for group in optimizer.param_groups:
        for p in group["params"]:
            if id(p) not in by_id:
                raise ReshardError("the optimizer holds a parameter that is not the model's")
            names.append(by_id[id(p)])
    return names


def reshard(payloads: list[dict], model: torch.nn.Module,
            optimizer: Optional[torch.optim.Optimizer]) -> tuple[dict, Optional[dict]]:
    """This rank's model (and optimizer) state from the rank files of a job of another size.

    Args:
        payloads: the saved rank files, in rank order (``model``, ``optimizer``,
            ``rank_local_ids``).
        model: this rank's model, its rank-local tables sharded for this rank's nodes.
        optimizer: its optimizer, or ``None``.

    Returns:
        ``(model state_dict, optimizer state_dict or None)`` to load.
    """
    mine = rank_local_ids(model)
    model_state = dict(payloads[0]["model"])
    saved_ids: list[dict[str, Any]] = [p.get("rank_local_ids") or {} for p in payloads]
    positions: dict[str, Tensor] = {}
    for name, want in mine.items():
        if any(name not in s for s in saved_ids):
            raise ReshardError(f"the checkpoint holds no node ids for the rank-local table "
                               f"'{name}' (written by an older pyg_sar); it can only be resumed "
                               f"on the world size that wrote it")
        positions[name] = _row_positions(name, want, [s[name] for s in saved_ids])
        model_state[name] = torch.cat([p["model"][name] for p in payloads])[positions[name]]
    if optimizer is None:
        return model_state, None
    opt_state = payloads[0]["optimizer"]
    if opt_state is None:
        return model_state, None
    names = _param_names(model, optimizer)
    state = dict(opt_state["state"])
    for index, name in enumerate(names):
        if name not in mine or index not in state:
            continue
        entry = dict(state[index])
        for key, value in entry.items():
            if isinstance(value, Tensor) and value.shape == payloads[0]["model"][name].shape:
                entry[key] = torch.cat([p["optimizer"]["state"][index][key]
                                        for p in payloads])[positions[name]]
        state[index] = entry
    return model_state, dict(opt_state, state=state)
