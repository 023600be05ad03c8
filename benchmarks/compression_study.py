"""Why truncation loses accuracy: which layer, which direction, how late, and train/eval mismatch.

    python benchmarks/compression_study.py --svd-dim 128 --lr 0.02 --epochs 100   # every run
    python benchmarks/compression_study.py ... --runs S1,full --lock /tmp/issue24-bench.lock
    python benchmarks/compression_study.py ... --report-only          # table + plot again

Workload: WordNet 3.0 with its 2000-wide bag of words replaced by ``--svd-dim`` standardised
truncated-SVD components (``load_dataset("wordnet", svd_dim=...)``, a frozen input projection
chosen for compute; the compression grid's calibration chose 128, lr 0.02, E = 100), 4 ranks,
METIS (M) and random (R) partitions (seed 0); 3-layer GraphSAGE, hidden 32,
dropout 0.5, Adam, mode ``sar``, seed 0, ``--epochs`` E. With ``project_first`` every layer
sends 32-wide rows forward and 32-wide gradients back, so each layer is a third of the bytes.

Runs (the base schedule is ``Truncate`` with ``Linear(64, 1, D)``, D = E unless said):

* ``full``: no compression (the reference of every gap);
* S1, which layer: ``convs.0`` / ``convs.1`` / ``convs.2`` only, 0+1 (all but the last), all;
* S2, which direction: all but the last, rows only / gradients only (``directions=``);
* S3, how late: all but the last, D = 0.2E, 0.5E, 0.8E (1.0E is S1's 0+1);
* S5, the candidates of ``auto``: Quantize with a bit ladder, the last layer floored at 4 bits:
  C1 (4b to .60E, 8b to .95E), C3 (2b .35 / 4b .65 / 8b .95), C4 (2b .45 / 4b .80 / 8b .95),
  then 32 bits; each with error feedback on both directions (the plan's) and without
  (``-noef``, added after review: stochastic rounding is unbiased, and error feedback sends the
  previous step's error along with each message).

Every run logs, every ``--eval-every`` epochs, validation and test accuracy with full rows
(evaluation never compresses) **and** with the compressors forced on for that evaluation only
(``in_eval``; the mismatch between training on compressed remote rows and evaluating on full
ones), the bytes every rank handed to the communicator in the training steps by layer and
direction (``comm.traffic``), and each compressed layer's ratio per epoch.

One launch (``mpiexec -n 4``) trains up to ``--per-launch`` runs of one partition; ``--lock``
takes that file's ``flock`` around each launch (the benchmark queue), so other jobs interleave.
Rank 0 writes each finished run to ``--work``/runs/<id>.json at once (a run with the same
settings is not trained again), and the driver rewrites ``benchmarks/results/
compression_study.json`` and ``.md`` (atomically) and ``plots/compression_study_gap.png``
(if matplotlib is importable) after every launch.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from compression import train_epoch  # noqa: E402 (the grid's training step, shared)

import pyg_sar  # noqa: E402
from pyg_sar.files import atomic_write  # noqa: E402

RESULTS = HERE / "results"
WORLD = 4
SVD_DIM = 64  # default; --svd-dim
HIDDEN = 32
LAYERS = 3
PARTS = {"M": "metis", "R": "random"}
LAYER_NAMES = [f"convs.{i}" for i in range(LAYERS)]
RANK_ENV = {"OMP_NUM_THREADS": "1"}
# The auto candidates (plan section 4) as presets.auto parameters: inner layers' bits and stage
# ends (fractions of E), then 32 bits; the last layer floored at 4 bits with its own ends.
CANDIDATES = {
    "C1": dict(bits=(4, 8), ends=(0.60, 0.95), last_bits=(4, 8), last_ends=(0.60, 0.95)),
    "C3": dict(bits=(2, 4, 8), ends=(0.35, 0.65, 0.95), last_bits=(4, 8), last_ends=(0.65, 0.95)),
    "C4": dict(bits=(2, 4, 8), ends=(0.45, 0.80, 0.95), last_bits=(4, 8), last_ends=(0.80, 0.95)),
}
# S5 variants: each candidate with error feedback on both directions (the plan's), and without
# (added after review: Quantize is unbiased, and error feedback adds the previous step's error
# to each message, so the per-step error the model sees grows).
VARIANTS = {**{c: (c, "both") for c in CANDIDATES},
            **{f"{c}-noef": (c, "none") for c in CANDIDATES}}


def _runs() -> dict[str, dict]:
    """Run id -> what it compresses (``part`` M or R; the rest as in the module docstring)."""
    out: dict[str, dict] = {}

    def add(group: str, name: str, parts: str, what: str, **spec) -> None:
        for p in parts:
            out[f"{name}-{p}"] = dict(group=group, part=p, what=what, **spec)

    add("full", "full", "MR", "no compression")
    for layers, label in (((0,), "convs.0 only"), ((1,), "convs.1 only"), ((2,), "convs.2 only")):
        add("S1", f"s1-L{layers[0]}", "M", f"truncate, D=E, {label}", layers=layers, d=1.0)
    add("S1", "s1-L01", "MR", "truncate, D=E, convs.0+1 (all but last)", layers=(0, 1), d=1.0)
    add("S1", "s1-all", "MR", "truncate, D=E, all layers", layers=(0, 1, 2), d=1.0)
    for direction in ("rows", "grads"):
        add("S2", f"s2-{direction}", "MR", f"truncate, D=E, all but last, {direction} only",
            layers=(0, 1), d=1.0, directions=direction)
    for d in (0.2, 0.5, 0.8):
        add("S3", f"s3-D{d}", "MR", f"truncate, D={d}E, all but last", layers=(0, 1), d=d)
    for name, (c, ef) in VARIANTS.items():
        kw = CANDIDATES[c]
        ladder = " / ".join(f"{b}b to {e:.2f}E" for b, e in zip(kw["bits"], kw["ends"]))
        last = " / ".join(f"{b}b to {e:.2f}E" for b, e in zip(kw["last_bits"], kw["last_ends"]))
        add("S5", f"s5-{name}", "MR", f"{name}: quantize {ladder}, then 32b; last layer {last}; "
            + ("EF both" if ef == "both" else "no EF (added after review)"), candidate=c,
            error_feedback=ef)
    return out


RUNS = _runs()
GROUPS = ("full", "S1", "S2", "S3", "S5")


# ------------------------------------------------------------------------------ rank side
def make_spec(run: dict, epochs: int, seed: int):
    """``SARConfig.compression`` of one run (``None`` for full communication)."""
    from pyg_sar.compression import Compressor, Linear, Truncate, auto
    if run["group"] == "full":
        return None
    if run["group"] == "S5":  # the preset with the candidate's parameters
        return auto(epochs, seed=seed, error_feedback=run.get("error_feedback", "both"),
                    **CANDIDATES[run["candidate"]])
    extra = {"directions": run["directions"]} if "directions" in run else {}
    comp = Compressor(Truncate(), Linear(64.0, 1.0, max(1, round(run["d"] * epochs))), seed=seed,
                      **extra)
    return {n: (comp if i in run["layers"] else None) for i, n in enumerate(LAYER_NAMES)}


def _merge(into: dict, ledger: dict) -> None:
    for layer, dirs in ledger.items():
        for d, v in dirs.items():
            into.setdefault(layer, {}).setdefault(d, 0)
            into[layer][d] += v["sent"]


def _evaluate(model, part, compressors) -> dict:
    """Validation and test accuracy with full rows, and with the compressors forced on."""
    from pyg_sar.nn.functional import accuracy
    model.eval()
    out = {}
    for label, forced in (("full", False), ("comp", True)):
        if forced and not compressors:
            break
        for c in compressors:
            c.in_eval = forced
        try:
            with torch.no_grad():
                logits = model(part.x, part.graph)
        finally:
            for c in compressors:
                c.in_eval = False
        out[f"val_{label}"] = accuracy(logits, part.y, part.val_mask)
        out[f"test_{label}"] = accuracy(logits, part.y, part.test_mask)
    return out


def train_run(ctx, part, run: dict, epochs: int, lr: float, eval_every: int, seed: int) -> dict:
    """One run on this rank's part; every rank returns the same record."""
    from torch_geometric.nn import GraphSAGE

    from pyg_sar.compression import compressors_of
    classes = int(part.meta.get("num_classes") or int(part.y.max()) + 1)
    torch.manual_seed(seed)
    model = GraphSAGE(part.x.shape[1], HIDDEN, LAYERS, classes, dropout=0.5)
    pyg_sar.convert(model, pyg_sar.SARConfig(mode="sar", compression=make_spec(run, epochs, seed)))
    pyg_sar.broadcast_parameters(model)
    torch.manual_seed(seed * 1000 + 1 + ctx.rank)  # dropout differs per rank, as in the grid
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    by_layer = compressors_of(model)
    compressors = list(by_layer.values())
    layer_comp = {n: c for n in LAYER_NAMES for c in compressors
                  if getattr(dict(model.named_modules())[n], "_sar_compressor", None) is c}
    ledger: dict = {}
    times, sent, ratios, curve = [], [], [], []
    best_val, test_at_best = -1.0, float("nan")
    for epoch in range(1, epochs + 1):
        ratios.append({n: c.ratio() for n, c in layer_comp.items()})
        loss, seconds, _ = train_epoch(ctx, model, part, optimizer, compressors)
        times.append(seconds)
        step = ctx.comm.traffic.as_dict()
        _merge(ledger, step)
        sent.append(sum(v["sent"] for dirs in step.values() for v in dirs.values()))
        if epoch % eval_every == 0 or epoch == epochs:
            point = {"epoch": epoch, "loss": float(loss.detach()),
                     **_evaluate(model, part, compressors)}
            curve.append(point)
            if point["val_full"] > best_val:
                best_val, test_at_best = point["val_full"], point["test_full"]
    ledgers = ctx.comm.allgather_object(ledger)
    bytes_by = {}
    for lg in ledgers:
        for layer, dirs in lg.items():
            for d, v in dirs.items():
                bytes_by.setdefault(layer, {}).setdefault(d, 0)
                bytes_by[layer][d] += v
    per_epoch = [sum(col) for col in zip(*ctx.comm.allgather_object(sent))]
    measured = times[2:] if len(times) > 4 else times
    return {"final_test_acc": curve[-1]["test_full"], "final_val_acc": curve[-1]["val_full"],
            "test_acc_at_best_val": test_at_best, "best_val_acc": best_val,
            "bytes_sent": sum(per_epoch), "bytes_per_epoch": per_epoch, "bytes_by": bytes_by,
            "ratios": ratios, "curve": curve, "final_loss": float(loss.detach()),
            "epoch_s": max(ctx.comm.allgather_object(statistics.median(measured))),
            "compressors": {n: c.describe() for n, c in by_layer.items()}}


def rank_run(ctx, parts: str, runs: list, settings: dict, out_dir: str) -> list:
    """Train ``runs`` (ids) one after the other; rank 0 writes each record when it is done."""
    torch.set_num_threads(1)
    part = pyg_sar.load_partition(parts, ctx.rank, world_size=ctx.world_size)
    done = []
    for run_id in runs:
        t = time.perf_counter()
        rec = train_run(ctx, part, RUNS[run_id], settings["epochs"], settings["lr"],
                        settings["eval_every"], settings["seed"])
        rec.update(id=run_id, **RUNS[run_id], settings=settings,
                   wall_s=time.perf_counter() - t)
        rec["layers"] = list(rec.get("layers", ()))
        if ctx.rank == 0:
            atomic_write(Path(out_dir) / f"{run_id}.json", json.dumps(rec, indent=1))
            print(f"  {run_id:>14}: test {rec['final_test_acc']:.4f} (at best val "
                  f"{rec['test_acc_at_best_val']:.4f}), {rec['bytes_sent'] / 1e6:8.1f} MB, "
                  f"{rec['epoch_s']:.3f} s/epoch, {rec['wall_s']:.0f} s", flush=True)
        done.append(run_id)
    return done


# ---------------------------------------------------------------------------- driver side
@contextmanager
def queue_lock(path: Optional[str]) -> Iterator[None]:
    """Hold ``flock(path)`` (the benchmark queue shared with the other benchmark jobs)."""
    if not path:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def partition(work: Path, part: str, dataset: str = "wordnet", svd_dim: int = SVD_DIM) -> Path:
    """The ``dataset``-SVD partition into 4 parts (cached under the grid's folder name)."""
    out = work / f"{dataset}-svd{svd_dim}-{PARTS[part]}-{WORLD}"
    if not (out / "meta.json").exists():
        from pyg_sar.datasets import load_dataset
        print(f"partitioning {dataset}-svd{svd_dim} into {WORLD} parts ({PARTS[part]})",
              flush=True)
        pyg_sar.partition_graph(load_dataset(dataset, svd_dim=svd_dim), WORLD, out,
                                method=PARTS[part], seed=0, balance="nodes",
                                overwrite=True)  # pinned: the study's results were made so
    return out


def load_records(run_dir: Path, settings: Optional[dict] = None) -> dict[str, dict]:
    """The finished runs in ``run_dir`` (only those trained with ``settings`` if given)."""
    out = {}
    for f in sorted(run_dir.glob("*.json")):
        rec = json.loads(f.read_text())
        if settings is None or rec.get("settings") == settings:
            out[rec["id"]] = rec
    return out


def select(spec: str) -> list[str]:
    """Run ids from a comma list of ids and group names (``all``: every run)."""
    ids: list[str] = []
    for item in [s for s in spec.split(",") if s]:
        if item == "all":
            got = list(RUNS)
        elif item in GROUPS:
            got = [k for k, v in RUNS.items() if v["group"] == item]
        elif item in RUNS:
            got = [item]
        else:
            raise SystemExit(f"--runs: unknown run or group {item!r} (groups: "
                             f"{', '.join(GROUPS)}; runs: {', '.join(RUNS)})")
        ids += [g for g in got if g not in ids]
    return ids


def run(args: argparse.Namespace) -> None:
    from pyg_sar.testing import run_on_ranks
    settings = dict(epochs=args.epochs, lr=args.lr, eval_every=args.eval_every, seed=args.seed,
                    svd_dim=args.svd_dim)
    work = Path(args.work)
    run_dir = work / "study_runs"
    run_dir.mkdir(parents=True, exist_ok=True)
    wanted = select(args.runs)
    for p in PARTS:
        todo = [r for r in wanted if RUNS[r]["part"] == p]
        while todo:
            done = load_records(run_dir, settings)
            todo = [r for r in todo if r not in done]
            if not todo:
                break
            batch = todo[:args.per_launch]
            with queue_lock(args.lock):
                parts = partition(work, p, args.dataset, args.svd_dim)
                print(f"{time.strftime('%H:%M:%S')} launch {PARTS[p]}: {', '.join(batch)}",
                      flush=True)
                run_on_ranks(f"{Path(__file__).resolve()}:rank_run", WORLD,
                             kwargs=dict(parts=str(parts), runs=batch, settings=settings,
                                         out_dir=str(run_dir)),
                             timeout=args.timeout, env=RANK_ENV)
            report(load_records(run_dir, settings), settings, Path(args.out))
            todo = todo[len(batch):]
    report(load_records(run_dir, settings), settings, Path(args.out))


# --------------------------------------------------------------------------------- report
def _grid_full_sd(svd_dim: int) -> dict[str, float]:
    """The seed spread (sd) of full's final test accuracy per partition from the grid's
    results (``wordnet-svd64-<method>-p4`` / sage), if it has them: the noise against which
    one seed's gaps are judged."""
    path = RESULTS / "compression_real.json"
    out: dict[str, float] = {}
    if not path.exists():
        return out
    try:
        summary = json.loads(path.read_text()).get("summary", [])
    except ValueError:
        return out
    names = {f"wordnet-svd{svd_dim}-{m}-p{WORLD}": p for p, m in PARTS.items()}
    for s in summary:
        if (s.get("method") == "full" and s.get("model") == "sage"
                and s.get("workload") in names and s.get("seeds", 0) > 1):
            out[names[s["workload"]]] = s["acc_std"]
    return out


def summarize(recs: dict[str, dict]) -> list[dict]:
    """One row per run: bytes relative to full on its partition, the gaps to full."""
    rows = []
    for rid, r in recs.items():
        full = recs.get(f"full-{r['part']}")
        row = dict(id=rid, group=r["group"], part=r["part"], what=r["what"],
                   final_test=r["final_test_acc"], best_val_test=r["test_acc_at_best_val"],
                   bytes_sent=r["bytes_sent"], epoch_s=r["epoch_s"])
        if full is not None:
            row["bytes_rel"] = r["bytes_sent"] / full["bytes_sent"]
            row["gap_final"] = full["final_test_acc"] - r["final_test_acc"]
            row["gap_best_val"] = full["test_acc_at_best_val"] - r["test_acc_at_best_val"]
            fcurve = {c["epoch"]: c for c in full["curve"]}
            lossy = [c for c in r["curve"] if _lossy_at(r, c["epoch"])]
            gaps = [fcurve[c["epoch"]]["test_full"] - c["test_full"] for c in lossy
                    if c["epoch"] in fcurve]
            row["gap_lossy_mean"] = statistics.mean(gaps) if gaps else float("nan")
            row["bytes_rel_by_layer"] = {
                layer: sum(r["bytes_by"].get(layer, {}).values())
                / max(1, sum(full["bytes_by"].get(layer, {}).values())) for layer in LAYER_NAMES}
            row["bytes_rel_by_direction"] = {
                d: sum(v.get(d, 0) for v in r["bytes_by"].values())
                / max(1, sum(v.get(d, 0) for v in full["bytes_by"].values()))
                for d in ("rows", "refetch", "grads")
                if any(d in v for v in full["bytes_by"].values())}
        mism = [c["test_comp"] - c["test_full"] for c in r["curve"]
                if "test_comp" in c and _lossy_at(r, c["epoch"])]
        row["comp_minus_full_eval"] = statistics.mean(mism) if mism else float("nan")
        rows.append(row)
    order = {k: i for i, k in enumerate(RUNS)}
    return sorted(rows, key=lambda x: order.get(x["id"], 999))


def _lossy_at(rec: dict, epoch: int) -> bool:
    """Whether the compressors were lossy in the training step of ``epoch`` (1-based)."""
    ratios = rec["ratios"][epoch - 1] if 0 < epoch <= len(rec["ratios"]) else {}
    return any(v > 1 for v in ratios.values())


def decide(rows: list[dict]) -> dict:
    """Section 4's rule on the S5 seed-0 runs: the candidate with the fewest bytes whose final
    test accuracy is >= full's - 0.3 points on both partitions; else the most accurate."""
    by = {(r["id"].rsplit("-", 1)[0][3:], r["part"]): r for r in rows if r["group"] == "S5"}
    cands = []
    for c in VARIANTS:
        got = [by.get((c, p)) for p in PARTS]
        if any(g is None or "gap_final" not in g for g in got):
            continue
        cands.append(dict(candidate=c, passes=all(g["gap_final"] <= 0.003 + 1e-12 for g in got),
                          bytes_rel={p: g["bytes_rel"] for p, g in zip(PARTS, got)},
                          bytes_rel_mean=statistics.mean(g["bytes_rel"] for g in got),
                          test={p: g["final_test"] for p, g in zip(PARTS, got)},
                          gap={p: g["gap_final"] for p, g in zip(PARTS, got)}))
    if len(cands) < len(VARIANTS):
        return {"decided": None, "candidates": cands,
                "why": "not every S5 run has finished (with its full run)"}
    passing = [c for c in cands if c["passes"]]
    if passing:
        pick = min(passing, key=lambda c: c["bytes_rel_mean"])
        why = ("the fewest bytes (mean of METIS and random) among those within 0.3 points of "
               "full on both partitions")
    else:
        pick = max(cands, key=lambda c: statistics.mean(c["test"].values()))
        why = "no candidate is within 0.3 points of full on both partitions: the most accurate"
    return {"decided": pick["candidate"], "why": why, "candidates": cands}


def _pct(x: float) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x * 100:.1f}%"


def _pts(x: Optional[float]) -> str:
    return "—" if x is None or math.isnan(x) else f"{x * 100:+.2f}"


def readout(rows: list[dict]) -> list[str]:
    """The study's four readouts, one line per partition, from the summary rows."""
    by = {r["id"]: r for r in rows}

    def cell(rid: str, label: str) -> Optional[str]:
        r = by.get(rid)
        if r is None or "gap_final" not in r:
            return None
        return (f"{label} {_pts(r['gap_final'])} (lossy phase {_pts(r['gap_lossy_mean'])}, "
                f"{_pct(r['bytes_rel'])} of the bytes)")

    def line(title: str, cells: list[tuple[str, str]]) -> list[str]:
        out = []
        for p, name in PARTS.items():
            got = [c for c in (cell(f"{rid}-{p}", label) for rid, label in cells) if c]
            if got:
                out.append(f"* {title}, {name}: " + "; ".join(got))
        return out

    lines = ["", "## Readout (gap = full - run, test points, final; one seed)", ""]
    lines += line("Which layer (S1, truncation 64x -> 1x over E)",
                  [("s1-L0", "convs.0 only"), ("s1-L1", "convs.1 only"),
                   ("s1-L2", "convs.2 only"), ("s1-L01", "convs.0+1"), ("s1-all", "all")])
    lines += line("Which direction (S2, all but last)",
                  [("s2-rows", "rows only"), ("s2-grads", "grads only"), ("s1-L01", "both")])
    lines += line("How late (S3, all but last, lossless from D)",
                  [("s3-D0.2", "D=0.2E"), ("s3-D0.5", "D=0.5E"), ("s3-D0.8", "D=0.8E"),
                   ("s1-L01", "D=1.0E")])
    mism = [(r["id"], r["comp_minus_full_eval"]) for r in rows
            if r["group"] in ("S1", "S2", "S3") and not math.isnan(r["comp_minus_full_eval"])]
    if mism:
        lo, hi = min(mism, key=lambda x: x[1]), max(mism, key=lambda x: x[1])
        lines.append(f"* Train/eval mismatch (truncation runs, compressed eval - full eval over "
                     f"the lossy phase): from {_pts(lo[1])} ({lo[0]}) to {_pts(hi[1])} "
                     f"({hi[0]}), mean {_pts(statistics.mean(v for _, v in mism))} over "
                     f"{len(mism)} runs")
    return lines


def table(result: dict) -> str:
    s = result["settings"]
    sd = result.get("full_sd_from_grid", {})
    lines = [
        f"WordNet-SVD{s['svd_dim']} ({s['svd_dim']} standardised truncated-SVD components of "
        f"the bag of words), "
        f"{WORLD} ranks, mode sar, 3-layer GraphSAGE hidden {HIDDEN}, dropout 0.5, Adam lr "
        f"{s['lr']}, {s['epochs']} epochs, seed {s['seed']}, evaluation every {s['eval_every']} "
        f"epochs. One seed: judge the gaps against the seed spread of full"
        + (" (grid, 3 seeds: " + ", ".join(f"{PARTS[p]} sd {v * 100:.2f} pts"
                                            for p, v in sd.items()) + ")" if sd else
           " (not yet in compression_real.json)") + ".",
        "",
        "Gap = full's test accuracy minus the run's (points; positive = the run is worse). "
        "*Lossy-phase gap*: mean gap over the evaluations while the schedule was lossy. "
        "*Compressed eval - full eval*: test accuracy with the compressors forced on minus "
        "with full rows, same model, mean over the lossy phase.",
        "",
        "| run | partition | what | bytes vs full | convs.0 / 1 / 2 bytes | rows / grads bytes "
        "| final test | gap final | gap at best val | lossy-phase gap | compressed eval - "
        "full eval | epoch s |",
        "|" + "---|" * 12]
    for r in result["summary"]:
        bl = r.get("bytes_rel_by_layer", {})
        bd = r.get("bytes_rel_by_direction", {})
        lines.append(
            f"| {r['id']} | {PARTS[r['part']]} | {r['what']} | {_pct(r.get('bytes_rel'))} | "
            f"{' / '.join(_pct(bl.get(n)) for n in LAYER_NAMES) if bl else '—'} | "
            f"{_pct(bd.get('rows'))} / {_pct(bd.get('grads'))} | {r['final_test']:.4f} | "
            f"{_pts(r.get('gap_final'))} | {_pts(r.get('gap_best_val'))} | "
            f"{_pts(r.get('gap_lossy_mean'))} | {_pts(r['comp_minus_full_eval'])} | "
            f"{r['epoch_s']:.2f} |")
    lines += readout(result["summary"])
    d = result.get("auto_decision")
    if d:
        lines += ["", "## auto: decision rule on the S5 runs (seed 0)", "",
                  "The rule (fixed before the runs): the candidate with the fewest bytes whose "
                  "final test accuracy is within 0.3 points of full on both partitions, else the "
                  "most accurate. The `-noef` variants were added after the first decision "
                  "(C1, among the error-feedback candidates only), on review: Quantize is "
                  "unbiased, and error feedback adds the previous step's error to every message, "
                  "which raises the per-step error the model sees; the rule was then re-applied, "
                  "unchanged, over all six.", ""]
        for c in d["candidates"]:
            lines.append(f"* {c['candidate']}: bytes {_pct(c['bytes_rel']['M'])} (METIS) / "
                         f"{_pct(c['bytes_rel']['R'])} (random); test {c['test']['M']:.4f} / "
                         f"{c['test']['R']:.4f}; gap to full {_pts(c['gap']['M'])} / "
                         f"{_pts(c['gap']['R'])} pts; within 0.3 pts on both: "
                         f"{'yes' if c['passes'] else 'no'}")
        lines.append(f"* decision: **{d['decided']}** ({d['why']})" if d["decided"] else
                     f"* no decision yet: {d['why']}")
    return "\n".join(lines) + "\n"


def plot(result: dict, recs: dict[str, dict], path: Path) -> Optional[Path]:
    """Gap to full (test accuracy, full-rows eval solid, compressed eval dotted) against epoch,
    one panel per (group, partition)."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    groups = [g for g in GROUPS if g != "full"]
    fig, axes = plt.subplots(len(groups), 2, figsize=(12, 3.2 * len(groups)), squeeze=False,
                             sharex=True)
    colors = plt.get_cmap("tab10")
    for gi, g in enumerate(groups):
        for pi, p in enumerate(PARTS):
            ax = axes[gi][pi]
            full = recs.get(f"full-{p}")
            ax.axhline(0, color="k", lw=0.8)
            if full is None:
                ax.set_title(f"{g}, {PARTS[p]}: full not run yet", fontsize=9)
                continue
            fc = {c["epoch"]: c["test_full"] for c in full["curve"]}
            runs = [r for r in recs.values() if r["group"] == g and r["part"] == p]
            for i, r in enumerate(sorted(runs, key=lambda x: x["id"])):
                pts = [(c["epoch"], fc[c["epoch"]] - c["test_full"],
                        fc[c["epoch"]] - c.get("test_comp", float("nan")))
                       for c in r["curve"] if c["epoch"] in fc]
                if not pts:
                    continue
                e, gfull, gcomp = zip(*pts)
                ax.plot(e, [100 * x for x in gfull], color=colors(i), label=r["id"])
                ax.plot(e, [100 * x for x in gcomp], color=colors(i), ls=":", lw=1)
            ax.set_title(f"{g}, {PARTS[p]} (dotted: compressed eval)", fontsize=9)
            ax.set_ylabel("full - run, test pts")
            if runs:
                ax.legend(fontsize=7)
            ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("epoch")
    s = result["settings"]
    fig.suptitle(f"WordNet-SVD{s['svd_dim']}, SAGE-{HIDDEN}, P={WORLD}, seed {s['seed']}, "
                 f"{s['epochs']} epochs: gap to full communication")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, path)
    return path


def report(recs: dict[str, dict], settings: dict, out: Path) -> None:
    rows = summarize(recs)
    d = settings["svd_dim"]
    result = {"workload": f"wordnet-svd{d}", "world_size": WORLD, "model":
              f"GraphSAGE({d}, {HIDDEN}, {LAYERS}, C, dropout=0.5)", "mode": "sar",
              "settings": settings, "candidates": {c: {k: list(v) for k, v in kw.items()}
                                                   for c, kw in CANDIDATES.items()},
              "cores": os.cpu_count(),
              "full_sd_from_grid": _grid_full_sd(d), "summary": rows,
              "auto_decision": decide(rows),
              "runs": [recs[k] for k in RUNS if k in recs]}
    atomic_write(out, json.dumps(result, indent=1))
    atomic_write(out.with_suffix(".md"), "# Compression study (why truncation loses "
                 "accuracy)\n\n" + table(result))
    plot(result, recs, out.parent / "plots" / f"{out.stem}_gap.png")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", default="all", help="comma list of run ids and groups "
                   f"({', '.join(GROUPS)}, all)")
    p.add_argument("--epochs", type=int, default=80)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--eval-every", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--svd-dim", type=int, default=SVD_DIM, help="SVD components of the features")
    p.add_argument("--per-launch", type=int, default=3, help="runs per launch (lock hold)")
    p.add_argument("--lock", default=None, help="flock this file around each launch")
    p.add_argument("--dataset", default="wordnet",
                   help="(smoke tests only: the study is WordNet's; e.g. citeseer)")
    p.add_argument("--work", default=str(HERE / ".cache" / "compression"))
    p.add_argument("--out", default=str(RESULTS / "compression_study.json"))
    p.add_argument("--timeout", type=float, default=3600.0, help="per launch (hang detector)")
    p.add_argument("--report-only", action="store_true")
    p.add_argument("--list", action="store_true", help="print the runs and exit")
    args = p.parse_args(argv)
    if args.list:
        for k, v in RUNS.items():
            print(f"{k:>14}  {v['group']:>4}  {v['what']}")
        return
    if args.epochs < 1 or args.eval_every < 1 or args.per_launch < 1:
        p.error("--epochs, --eval-every and --per-launch must be >= 1")
    if args.report_only:
        settings = dict(epochs=args.epochs, lr=args.lr, eval_every=args.eval_every,
                        seed=args.seed, svd_dim=args.svd_dim)
        report(load_records(Path(args.work) / "study_runs", settings), settings, Path(args.out))
        print(Path(args.out).with_suffix(".md").read_text())
        return
    run(args)


if __name__ == "__main__":
    main()
