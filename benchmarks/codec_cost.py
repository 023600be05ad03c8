"""The compressor's own cost next to a block's compute (issue 11: it must be negligible).

    python benchmarks/codec_cost.py                 # 50k x 256 float32, threads 1 and 2
    python benchmarks/codec_cost.py --rows 20000 --repeats 3 --threads 1
    python benchmarks/codec_cost.py --plot-only benchmarks/results/codec_cost.json

One "epoch-equivalent" is one message of a WordNet-sized boundary (``--rows`` x ``--channels``
float32, default 50k x 256, gathered from the local rows in a random order as the engine's
``send_idx`` does) as the engine sends it under a codec
(:class:`pyg_sar.compression.BoundCodec`): ``encode_rows`` on the sender (gathers only what
is sent), the payload copied into the receiver's fresh buffer (what the transport does), and
``decode``; for truncation and random subsets at ratios 4, 8 and 16 and quantisation at 8, 4
and 2 bits: ``legacy`` (the pure-torch codec before the native kernels, torch.rand noise),
``reference`` (today's pure-torch fallback, hashed noise, the kernels' oracle) and ``native``
(the fused kernels the codec runs). The same message sent raw (gather, fresh receive buffer,
copy) is measured too: ``net_s`` = codec message - raw message is what compression adds to a
message's CPU time (both pay for a full-size buffer of rows: raw on both sides, the codec on
the receiver's decode), ``seconds`` is the codec message's total.

The block's compute, measured in the same run on the same rows: a 256 x 256 linear layer plus a
sum aggregation over a random CSR graph (``--degree`` in-edges per row,
``pyg_sar.ops.gather_aggregate``). Median seconds of ``--repeats`` runs after one warm-up, at
each ``--threads`` count (``torch.set_num_threads``); ``alloc_mb``: megabytes the codec
allocates in one encode + decode (torch profiler, sum of its allocations, not a peak). The
machine's load average is recorded with the results.
Results: ``benchmarks/results/codec_cost.json`` and ``plots/codec_cost.png``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from pyg_sar.compression import BoundCodec, Quantize, RandomSubset, Truncate  # noqa: E402
from pyg_sar.files import atomic_write  # noqa: E402
from pyg_sar.ops import gather_aggregate  # noqa: E402

RATIOS = {8: 4.0, 4: 8.0, 2: 16.0}  # quantisation bits -> the ratio that selects them


class LegacyQuantize(Quantize):
    """The pure-torch codec as it was before the native kernels (commit 03f80b5): noise from
    ``torch.rand`` with a seeded generator, fused torch ops. Same wire size; a baseline only."""

    def encode(self, rows, ratio, key):
        from pyg_sar.compression.keys import generator
        from pyg_sar.compression.packing import pack
        bits, count, meta = self._layout(tuple(rows.shape[1:]), rows.dtype, ratio)
        x = rows.reshape(rows.shape[0], count).to(meta)
        lo, hi = torch.aminmax(x, dim=1, keepdim=True)
        levels = (1 << bits) - 1
        step = (hi - lo) / levels
        step = torch.where(step > 0, step, torch.ones_like(step))
        codes = torch.rand(x.shape, generator=generator(key.noise_seed(), x.device),
                           device=x.device, dtype=meta)
        codes.addcmul_(x - lo, 1.0 / step).floor_().clamp_(0, levels)
        header = torch.cat([lo, step], dim=1).view(torch.uint8)
        return torch.cat([pack(codes, bits), header], dim=1)

    def decode(self, payload, row_shape, dtype, ratio, key):
        from pyg_sar.compression.packing import packed_bytes, unpack
        bits, count, meta = self._layout(row_shape, dtype, ratio)
        body = packed_bytes(count, bits)
        header = payload[:, body:].clone(memory_format=torch.contiguous_format).view(meta)
        codes = unpack(payload[:, :body], bits, count)
        x = torch.addcmul(header[:, :1], codes.to(meta), header[:, 1:2])
        return x.to(dtype).view(payload.shape[0], *row_shape)


def codecs() -> list[tuple[str, object, float]]:
    """(label, codec, ratio) of every measured configuration."""
    out = []
    for bits, ratio in RATIOS.items():
        out.append((f"truncate r{ratio:g}", Truncate(), ratio))
        out.append((f"subset r{ratio:g}", RandomSubset(), ratio))
        out.append((f"quantize-legacy {bits}b", LegacyQuantize(), ratio))
        out.append((f"quantize-reference {bits}b", Quantize(backend="reference"), ratio))
        out.append((f"quantize-native {bits}b", Quantize(backend="native"), ratio))
    return out


def median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def allocated_mb(fn) -> float:
    """Megabytes torch allocates on the CPU during one call (sum over allocations)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    return sum(max(e.cpu_memory_usage, 0) for e in prof.events()
               if e.cpu_parent is None) / 2**20


def measure(rows: int, channels: int, degree: int, threads: int, repeats: int) -> dict:
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(rows, channels, generator=gen)
    weight = torch.randn(channels, channels, generator=gen) / channels ** 0.5
    col = torch.randint(0, rows, (rows * degree,), generator=gen)
    rowptr = torch.arange(0, rows * degree + 1, degree)

    index = torch.randperm(rows, generator=gen)

    def block():
        return gather_aggregate(rowptr, col, torch.nn.functional.linear(x, weight))

    def raw_message():  # gather on the sender, the receiver's fresh buffer filled
        send = x.index_select(0, index)
        return torch.empty_like(send).copy_(send)

    result = {"threads": threads, "block_s": median_seconds(block, repeats),
              "linear_s": median_seconds(lambda: torch.nn.functional.linear(x, weight), repeats),
              "raw_message_s": median_seconds(raw_message, repeats), "codecs": []}
    for label, codec, ratio in codecs():
        bound = BoundCodec(codec, ratio, 1, 0, 0, 0)
        key = bound.key(0, 0, 1, "rows")

        def message(bound=bound, key=key):
            payload = bound.encode_rows(x, index, key)
            received = torch.empty_like(payload).copy_(payload)
            return bound.decode(received, (channels,), x.dtype, key)

        def encode(bound=bound, key=key):
            return bound.encode_rows(x, index, key)

        seconds = median_seconds(message, repeats)
        payload = bound.encode_rows(x, index, key)
        net = seconds - result["raw_message_s"]
        result["codecs"].append({
            "label": label, "ratio": ratio, "seconds": seconds, "net_s": net,
            "encode_s": median_seconds(encode, repeats),
            "wire_bytes": payload.numel() * payload.element_size(),
            "alloc_mb": allocated_mb(message),
            "vs_block": seconds / result["block_s"], "net_vs_block": net / result["block_s"]})
        print(f"threads {threads}  {label:26s} {seconds * 1e3:8.1f} ms, {net * 1e3:+8.1f} ms "
              f"vs raw ({100 * net / result['block_s']:+6.1f}% of the block's "
              f"{result['block_s'] * 1e3:.1f} ms)", flush=True)
    print(f"threads {threads}  {'raw message':26s} {result['raw_message_s'] * 1e3:8.1f} ms",
          flush=True)
    return result


def plot(result: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = result["runs"]
    labels = ([c["label"] for c in runs[0]["codecs"]]
              + ["raw message (no codec)", "block (linear + aggregate)"])
    fig, ax = plt.subplots(figsize=(9, 5.5))
    width = 0.8 / len(runs)
    for i, run in enumerate(runs):
        values = ([c["seconds"] * 1e3 for c in run["codecs"]]
                  + [run["raw_message_s"] * 1e3, run["block_s"] * 1e3])
        ax.barh([j + i * width for j in range(len(labels))], values, height=width,
                label=f"{run['threads']} thread(s)")
    ax.set_yticks([j + 0.4 - width / 2 for j in range(len(labels))], labels, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("ms per message of the boundary: gather/encode, receive, decode (median)")
    ax.set_title(f"Codec cost, {result['rows']} x {result['channels']} float32 "
                 f"(load {result['loadavg_before'][0]:.2f})")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--channels", type=int, default=256)
    parser.add_argument("--degree", type=int, default=10)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "codec_cost.json")
    parser.add_argument("--plot-only", type=Path, default=None)
    args = parser.parse_args()
    if args.plot_only:
        plot(json.loads(args.plot_only.read_text()), RESULTS / "plots" / "codec_cost.png")
        return
    result = {"rows": args.rows, "channels": args.channels, "degree": args.degree,
              "repeats": args.repeats, "torch": torch.__version__,
              "machine": platform.processor() or platform.machine(),
              "cpus": os.cpu_count(), "loadavg_before": list(os.getloadavg()),
              "runs": [measure(args.rows, args.channels, args.degree, t, args.repeats)
                       for t in args.threads]}
    result["loadavg_after"] = list(os.getloadavg())
    atomic_write(args.out, json.dumps(result, indent=1) + "\n")
    plot(result, RESULTS / "plots" / f"{args.out.stem}.png")
    print(f"load average before {result['loadavg_before']}, after {result['loadavg_after']}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
