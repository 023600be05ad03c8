"""Measure the examples against single-process PyG, and record the ported scripts' diffs.

    python tests/examples/compare_with_pyg.py --pyg PATH/TO/pytorch_geometric [--only gcn,sgc]
    python tests/examples/compare_with_pyg.py --pyg PATH --write-diffs   # diffs only

``--pyg`` is a checkout (or bare clone) of PyG's repository. For every example the script runs,
with the same epochs and seed (``tests/examples/runner.py --seed``):

* PyG: for a ported script, PyG's own ``examples/<name>.py`` at the repository's HEAD with one
  line changed, its ``Planetoid`` import (PyG's would download the data; this one reads the
  files pyg_sar ships); for the other examples, the example itself with ``pyg_sar.distribute``
  and ``pyg_sar.convert`` as the identity (``runner.py --plain``): PyG's layers on the whole
  graph in one process;
* the example as one process, and under ``mpiexec -n 2``.

It prints a Markdown table of the final test accuracies (the value each script prints last)
and writes them as JSON (``--out``). ``--write-diffs`` writes ``tests/examples/ported/<name>.diff``
(PyG's commit and the SHA-256 of its original, then the unified diff to the port), which
``test_port_diffs.py`` checks against the ports.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXAMPLES = ROOT / "examples"
RUNNER = HERE / "runner.py"
DIFFS = HERE / "ported"
PORTED = ("gcn", "gat", "tagcn", "sgc", "mixhop", "pmlp", "gcn2_cora", "link_pred",
          "infomax_transductive", "autoencoder", "rgcn_link_pred", "correct_and_smooth")
LOADER = ("from torch_geometric.datasets import Planetoid\n",
          "from pyg_sar.datasets import Planetoid\n")
# Further lines of a PyG original replaced to run here: scikit-learn is not installed, so
# link_pred.py's roc_auc_score becomes the same statistic computed by pyg_sar in one process.
RUNNABLE = {"link_pred": [("from sklearn.metrics import roc_auc_score\n",
                           "from pyg_sar.link import roc_auc\n"
                           "roc_auc_score = lambda y, s: float(roc_auc(torch.as_tensor(s), "
                           "torch.as_tensor(y)))  # noqa: E731\n")]}

# row -> (arguments, epoch cap for PyG's hard-coded loops, or None); the script is the row's
# name up to a colon ("compression:none" runs compression.py).
CASES = {
    "gcn": ([], None),
    "gat": ([], None),
    "tagcn": ([], None),
    "sgc": ([], None),
    "mixhop": ([], None),
    "pmlp": ([], None),
    "gcn2_cora": ([], 200),
    "link_pred": ([], None),
    "infomax_transductive": ([], None),
    "autoencoder": ([], 50),
    "appnp": ([], None),
    "own_layer": ([], None),
    "compression": ([], None),
    "compression:none": (["--codec", "none"], None),
    "checkpoint_resume": (["--checkpoint", "{tmp}/ckpt-{run}"], None),
    "graph_sage_wordnet": (["--epochs", "20", "--eval_every", "20"], None),
}


def portdiff():
    """The docs' diff tool (``docs/_ext/portdiff.py``)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("portdiff", ROOT / "docs/_ext/portdiff.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def git(pyg: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(pyg), *args], check=True, capture_output=True,
                          text=True).stdout


def original(pyg: Path, name: str) -> str:
    return git(pyg, "show", f"HEAD:examples/{name}.py")


def final_test_accuracy(text: str) -> float | None:
    values = re.findall(r"(?:Test|Accuracy): (\d+\.\d+)", text)  # infomax: "Accuracy:"
    return float(values[-1]) if values else None


def run(cmd: list[str], ranks: int, tmp: Path, timeout: float) -> tuple[float | None, float]:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    out = tmp / "rank0.out"
    if ranks > 1:
        mpiexec = Path(sys.executable).with_name("mpiexec")
        cmd = [str(mpiexec), "-n", str(ranks), "-outfile-pattern", str(tmp / "rank%r.out"),
               "-errfile-pattern", str(tmp / "rank%r.err"), *cmd]
    start = time.perf_counter()
    with open(out, "w") if ranks == 1 else open(os.devnull, "w") as sink:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.DEVNULL,
                              timeout=timeout)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        print(f"  failed ({proc.returncode}): {' '.join(cmd)}", file=sys.stderr)
        return None, wall
    return final_test_accuracy(out.read_text(errors="replace")), wall


def write_diffs(pyg: Path) -> None:
    pd = portdiff()
    commit = git(pyg, "rev-parse", "HEAD").strip()
    DIFFS.mkdir(exist_ok=True)
    for name in PORTED:
        port = (EXAMPLES / f"{name}.py").read_text(encoding="utf-8")
        text = pd.make_diff_file(original(pyg, name), port, name, commit)
        (DIFFS / f"{name}.diff").write_text(text, encoding="utf-8")
        _, hunks = pd.parse(text)
        added = sum(x[:1] == "+" for _, _, body in hunks for x in body)
        removed = sum(x[:1] == "-" for _, _, body in hunks for x in body)
        print(f"{name}: +{added} -{removed} (sum {added + removed}, max {max(added, removed)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pyg", type=Path, required=True, help="PyG repository (git)")
    parser.add_argument("--only", type=str, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "accuracy.json")
    parser.add_argument("--write-diffs", action="store_true")
    args = parser.parse_args()
    if args.write_diffs:
        write_diffs(args.pyg)
        return
    names = args.only.split(",") if args.only else list(CASES)
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        (tmp / "examples").mkdir()
        for name in names:
            argv, cap = CASES[name]
            script = name.split(":")[0]
            capped = ["--max-epochs", str(cap)] if cap else []
            row = {"epochs_cap": cap, "seed": args.seed}
            for label, ranks in (("pyg", 1), ("one_process", 1), ("two_ranks", 2)):
                work = tmp / f"{name.replace(':', '-')}-{label}"
                work.mkdir()
                script_args = [a.format(tmp=tmp, run=label) for a in argv]
                if label == "pyg" and script in PORTED:
                    text = original(args.pyg, script)
                    assert text.count(LOADER[0]) == 1, script
                    path = tmp / "examples" / f"{script}.py"
                    text = text.replace(*LOADER)
                    for old, new in RUNNABLE.get(script, ()):
                        assert text.count(old) == 1, (script, old)
                        text = text.replace(old, new)
                    path.write_text(text)
                    plain = []
                else:
                    path = EXAMPLES / f"{script}.py"
                    plain = ["--plain"] if label == "pyg" else []
                    if plain and script == "checkpoint_resume":  # a plain Data has no partition
                        script_args += ["--save_every", str(10**9)]  # fingerprint: no saving
                cmd = [sys.executable, str(RUNNER), "--seed", str(args.seed), *capped, *plain,
                       str(path), *script_args]
                acc, wall = run(cmd, ranks, work, args.timeout)
                row[label] = acc
                row[f"{label}_wall_s"] = round(wall, 1)
                print(f"{name:20s} {label:12s} test acc {acc}  ({wall:.0f} s)", flush=True)
            results[name] = row
            args.out.parent.mkdir(exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print("\n| example | PyG, one process | pyg_sar, one process | pyg_sar, 2 ranks |")
    print("|---|---|---|---|")
    for name, row in results.items():
        cells = [f"{row[k]:.4f}" if row.get(k) is not None else "failed"
                 for k in ("pyg", "one_process", "two_ranks")]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
