"""``python -m pyg_sar.train --task link``: full-batch link prediction over P ranks.

The loop of PyG's ``examples/link_pred.py`` with a PyG ``BasicGNN`` encoder (``--model``) and a
dot-product decoder::

    mpiexec -n 2 python -m pyg_sar.train --task link --dataset cora --epochs 100
    python -m pyg_sar.partition --task link --dataset cora --num-parts 2 --out parts/cora-link-2
    mpiexec -n 2 python -m pyg_sar.train --task link --parts parts/cora-link-2
    python -m pyg_sar.train --task link --dataset cora --reference   # plain PyG, one process

The dataset is split by PyG's ``RandomLinkSplit`` (undirected, seeded by ``--seed``; every
rank makes the same split) and handed to :func:`pyg_sar.distribute`, or a split written by the
partition CLI is loaded with :func:`pyg_sar.load_link_split`. Each epoch draws one negative
per training positive from the whole graph with :func:`pyg_sar.link.negative_sampling`, keyed
by ``(--seed, epoch)``, so any number of ranks trains on the same pairs; pair ends living on
other ranks are fetched by :func:`pyg_sar.gather`. The loss is the global binary
cross-entropy; validation and test report the global ROC AUC and Hits@K (each positive against
the split's negative pairs, one pool, as OGB's link datasets rank them).

``--reference`` trains the plain, unconverted model on the whole split in one process with the
same negatives (:func:`pyg_sar.link.reference_negative_sampling`): with ``--dropout 0`` its
numbers are the P-rank run's, to rounding.
"""
from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

import pyg_sar

NEG_METHODS = ("uniform", "degree")


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse the node-task options that ``--task link`` does not implement (argparse error)."""
    if args.task != "link":
        return
    refused = [("--sampler", args.sampler is not None), ("--checkpoint", bool(args.checkpoint)),
               ("--precision", args.precision != "32"),
               ("--wire-dtype", args.wire_dtype != "float32"),
               ("--compression", getattr(args, "compression", "none") != "none")]
    for flag, given in refused:
        if given:
            parser.error(f"{flag} is not supported with --task link (full-batch link "
                         f"prediction trains in --dtype without compression or checkpoints)")
    for flag, value in (("--num-val", args.num_val), ("--num-test", args.num_test)):
        if not 0.0 < value < 1.0:
            parser.error(f"argument {flag}: must be in (0, 1) (got {value})")
    if args.num_val + args.num_test >= 1.0:
        parser.error(f"--num-val {args.num_val} + --num-test {args.num_test} leaves no "
                     f"training edges")
    if args.hits_k < 1:
        parser.error(f"argument --hits-k: must be >= 1 (got {args.hits_k})")


def link_split(data: Any, num_val: float, num_test: float, seed: int) -> tuple:
    """PyG's ``RandomLinkSplit`` (undirected, no negative training samples: they are drawn per
    epoch) of ``data``, seeded: the same triple on every rank."""
    from pyg_sar.partition.link_split import random_link_split
    return random_link_split(data, num_val, num_test, seed=seed)


def load_split(args: argparse.Namespace, ctx) -> tuple:
    """``(train, val, test)``: the whole split for ``--reference``, this rank's parts else."""
    if args.parts:
        return pyg_sar.load_link_split(args.parts, ctx.rank, context=ctx)
    from pyg_sar.datasets import load_dataset
    name = args.dataset or "cora"
    triple = link_split(load_dataset(name), args.num_val, args.num_test, args.seed)
    if args.reference:
        if ctx.world_size != 1:
            raise ValueError(f"--reference runs plain PyG in one process (got world size "
                             f"{ctx.world_size})")
        return triple
    t = time.perf_counter()
    parts = pyg_sar.distribute(triple, method=args.method, seed=args.seed, context=ctx)
    if ctx.rank == 0:
        print(f"split {name} ({args.num_val}/{args.num_test} val/test) and distributed it "
              f"over {ctx.world_size} rank(s) in {time.perf_counter() - t:.2f} s", flush=True)
    return parts


class DotLinkPredictor(torch.nn.Module):
    """An encoder and a dot-product decoder over gathered pair ends."""

    def __init__(self, encoder: torch.nn.Module, pick: Callable[[Tensor, Tensor], Tensor]):
        super().__init__()
        self.encoder = encoder
        self._pick = pick

    def forward(self, x: Tensor, edge_index: Any, pairs: Tensor) -> Tensor:
        z = self.encoder(x, edge_index)
        return (self._pick(z, pairs[0]) * self._pick(z, pairs[1])).sum(dim=-1)


def _negatives(args: argparse.Namespace, train: Any, epoch: int) -> Tensor:
    """This epoch's negatives: one per training positive, keyed by its id in the split."""
    from pyg_sar import link
    if args.reference:
        keys = torch.arange(train.edge_label_index.shape[1])
        return link.reference_negative_sampling(
            train.edge_index, keys, num_nodes=train.num_nodes, seed=args.seed, epoch=epoch,
            method=args.neg_method)
    return link.negative_sampling(train.edge_index, train.edge_label_ids, seed=args.seed,
                                  epoch=epoch, method=args.neg_method)


def _evaluate(model: DotLinkPredictor, split: Any, dtype: torch.dtype, k: int) -> tuple:
    """Global ROC AUC and Hits@K of ``split``'s labelled pairs (on its own graph)."""
    from pyg_sar.link import hits_at_k, roc_auc
    model.eval()
    with torch.no_grad():
        scores = model(split.x.to(dtype), split.edge_index, split.edge_label_index)
    labels = split.edge_label
    auc = roc_auc(scores, labels)
    hits = hits_at_k(scores[labels == 1], scores[labels == 0], k)
    return float(auc), float(hits)


def run(args: argparse.Namespace) -> dict:
    """Train and evaluate link prediction; returns the metrics (rank 0 prints and writes)."""
    from pyg_sar.distributed.supervision import supervision_requested
    from pyg_sar.nn.functional import binary_cross_entropy_with_logits
    from pyg_sar.train_common import DTYPES, build_model
    from pyg_sar.train_common import peak_rss_mb as _peak_rss_mb
    from pyg_sar.train_common import write_json as _write_json
    ctx = pyg_sar.init(backend=args.backend, supervise=supervision_requested(None, True))
    train, val, test = load_split(args, ctx)
    dtype = DTYPES[args.dtype]
    torch.manual_seed(args.seed)  # identical initial parameters on every rank
    encoder = build_model(args, train.x.shape[1], args.hidden).to(dtype)
    pick = (lambda z, index: z[index]) if args.reference else \
        (lambda z, index: pyg_sar.gather(z, index, ids="new"))  # the split's new global ids
    model = DotLinkPredictor(encoder, pick)
    if not args.reference:
        pyg_sar.convert(model, pyg_sar.SARConfig(mode=args.mode,
                                                 pipeline_depth=args.pipeline_depth))
        pyg_sar.broadcast_parameters(model, ctx=ctx)
    torch.manual_seed(args.seed + 1 + ctx.rank)  # dropout masks of the rank's own nodes
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    x = train.x.to(dtype)
    lead = ctx.rank == 0
    if lead:
        where = ("plain PyG, whole graph, 1 process" if args.reference else
                 f"{ctx.world_size} rank(s), mode={args.mode}, backend={ctx.backend}")
        print(f"link prediction: {args.model} encoder ({args.layers} layers, hidden "
              f"{args.hidden}) + dot decoder on {where}, negatives {args.neg_method}",
              flush=True)
    history: list[dict] = []
    best_val, test_at_best, test_auc = -1.0, float("nan"), float("nan")
    pos_label = train.edge_label.to(dtype)
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        model.train()
        optimizer.zero_grad()
        neg = _negatives(args, train, epoch)
        pairs = torch.cat([train.edge_label_index, neg], dim=1)
        labels = torch.cat([pos_label, pos_label.new_zeros(neg.shape[1])])
        out = model(x, train.edge_index, pairs)
        loss = binary_cross_entropy_with_logits(out, labels, context=None if args.reference
                                                else ctx)
        loss.backward()
        if not args.reference:
            pyg_sar.all_reduce_gradients(model, ctx)
        optimizer.step()
        record: dict[str, Any] = dict(epoch=epoch, loss=float(loss.detach()),
                                      step_time_s=time.perf_counter() - t0)
        if epoch % args.eval_every == 0 or epoch == args.epochs:
            val_auc, val_hits = _evaluate(model, val, dtype, args.hits_k)
            test_auc, test_hits = _evaluate(model, test, dtype, args.hits_k)
            if val_auc > best_val:
                best_val, test_at_best = val_auc, test_auc
            record.update(val_auc=val_auc, test_auc=test_auc, val_hits=val_hits,
                          test_hits=test_hits)
        history.append(record)
        if lead and (epoch % args.log_every == 0 or epoch == 1 or epoch == args.epochs):
            scores = (f"  val auc {record['val_auc']:.4f}  test auc {record['test_auc']:.4f}  "
                      f"val hits@{args.hits_k} {record['val_hits']:.4f}  test hits@"
                      f"{args.hits_k} {record['test_hits']:.4f}" if "val_auc" in record else "")
            print(f"epoch {epoch:4d}/{args.epochs}  loss {record['loss']:.4f}{scores}  "
                  f"({record['step_time_s'] * 1e3:.1f} ms/step)", flush=True)
    metrics = dict(config=vars(args), task="link", world_size=ctx.world_size,
                   backend=ctx.backend, final_test_auc=test_auc, best_val_auc=best_val,
                   test_auc_at_best_val=test_at_best, history=history,
                   peak_rss_mb=ctx.comm.allgather_object(_peak_rss_mb()))
    if lead:
        print(f"final test AUC: {test_auc:.4f}  (test at best val {test_at_best:.4f}, best val "
              f"{best_val:.4f})", flush=True)
        if args.metrics:
            _write_json(Path(args.metrics), metrics)
    return metrics
