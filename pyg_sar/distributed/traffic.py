"""Bytes of the engine's traffic by layer and direction (``comm.traffic``).

Every row and gradient message a propagate call sends or receives is counted under its layer's
name and one of three directions: ``rows`` (forward fetch), ``refetch`` (a SAR backward pass
fetching the rows again) and ``grads`` (gradients of fetched rows returned to their owners).
The byte counts are those of the tensors handed to the communicator, i.e. after compression.
"""
from __future__ import annotations

DIRECTIONS = ("rows", "refetch", "grads")


class TrafficLedger:
    """Sent and received bytes per ``(layer, direction)``; reset by the training loop."""

    def __init__(self) -> None:
        self._bytes: dict[str, dict[str, list[int]]] = {}

    def add(self, layer: str, direction: str, sent: int, recv: int) -> None:
        if direction not in DIRECTIONS:
            raise ValueError(f"TrafficLedger: direction must be one of {DIRECTIONS} "
                             f"(got {direction!r})")
        entry = self._bytes.setdefault(layer, {}).setdefault(direction, [0, 0])
        entry[0] += int(sent)
        entry[1] += int(recv)

    def reset(self) -> None:
        self._bytes.clear()

    def as_dict(self) -> dict[str, dict[str, dict[str, int]]]:
        """``{layer: {direction: {"sent": bytes, "recv": bytes}}}``."""
        return {layer: {d: {"sent": v[0], "recv": v[1]} for d, v in dirs.items()}
                for layer, dirs in self._bytes.items()}

    def totals(self) -> dict[str, int]:
        """``{"sent": bytes, "recv": bytes}`` over every layer and direction."""
        sent = sum(v[0] for dirs in self._bytes.values() for v in dirs.values())
        recv = sum(v[1] for dirs in self._bytes.values() for v in dirs.values())
        return {"sent": sent, "recv": recv}


def merge(ledgers: list[dict]) -> dict[str, dict[str, dict[str, int]]]:
    """The sum of several :meth:`TrafficLedger.as_dict` results (e.g. of several epochs)."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for ledger in ledgers:
        for layer, dirs in ledger.items():
            for d, v in dirs.items():
                entry = out.setdefault(layer, {}).setdefault(d, {"sent": 0, "recv": 0})
                entry["sent"] += v["sent"]
                entry["recv"] += v["recv"]
    return out


class EpochTraffic:
    """The training loop's view of the ledger: per epoch, every rank's bytes of the training
    step by layer and direction (gathered on all ranks: one small collective per epoch), and
    the bytes of the evaluation pass; :func:`summarize` totals the epochs' records.

    Usage per epoch: :meth:`start`, the training step, :meth:`training_done`, the evaluation
    (if any), :meth:`record` (collective).
    """

    def __init__(self, comm) -> None:
        self.comm = comm
        self._train: dict = {}

    def start(self) -> None:
        self.comm.traffic.reset()

    def training_done(self) -> None:
        self._train = self.comm.traffic.as_dict()
        self.comm.traffic.reset()

    def record(self) -> dict:
        """This epoch's ``{"traffic": [ledger of each rank], "bytes_sent": int,
        "eval_bytes_sent": int}`` (the same on every rank)."""
        gathered = self.comm.allgather_object([self._train, self.comm.traffic.totals()["sent"]])
        ledgers = [g[0] for g in gathered]
        sent = sum(v["sent"] for ledger in ledgers for dirs in ledger.values()
                   for v in dirs.values())
        return {"traffic": ledgers, "bytes_sent": sent,
                "eval_bytes_sent": sum(g[1] for g in gathered)}


def summarize(records: list[dict]) -> dict:
    """Totals over epoch records of :meth:`EpochTraffic.record` (records without traffic are
    skipped): per rank (by layer and direction), by direction, by layer, and overall for the
    training steps; the evaluation passes separately. Records of a run resumed on another
    number of ranks hold ledgers of both sizes: rank ``q``'s total sums the epochs that had a
    rank ``q``."""
    records = [r for r in records if "traffic" in r]
    world = max((len(r["traffic"]) for r in records), default=0)
    per_rank = [merge([r["traffic"][q] for r in records if q < len(r["traffic"])])
                for q in range(world)]
    by_direction: dict[str, int] = {}
    by_layer: dict[str, int] = {}
    for ledger in per_rank:
        for layer, dirs in ledger.items():
            for d, v in dirs.items():
                by_direction[d] = by_direction.get(d, 0) + v["sent"]
                by_layer[layer] = by_layer.get(layer, 0) + v["sent"]
    return {"per_rank": per_rank, "by_direction_sent": by_direction,
            "by_layer_sent": by_layer, "bytes_sent": sum(by_direction.values()),
            "eval_bytes_sent": sum(r.get("eval_bytes_sent", 0) for r in records)}
