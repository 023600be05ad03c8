"""The documentation: the Sphinx site builds with warnings as errors, the porting diff is the diff
of the example CI runs, and the README stays a short front page pointing at the docs."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
BUILD_TIMEOUT_S = 180


def _ext(name: str):
    """A module of docs/_ext (the docs' build helpers, not part of the package)."""
    spec = importlib.util.spec_from_file_location(name, DOCS / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sphinx_build_has_no_warnings(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    out = tmp_path / "html"
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q",
         "-d", str(tmp_path / "doctrees"), str(DOCS), str(out)],
        capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, cwd=ROOT)
    seconds = time.monotonic() - start
    assert proc.returncode == 0, (f"sphinx-build -W failed (exit {proc.returncode}) after "
                                  f"{seconds:.1f} s:\n{proc.stdout[-4000:]}\n"
                                  f"{proc.stderr[-8000:]}")
    for page in ("index", "getting_started", "porting", "how_sar_works", "supported_layers",
                 "compression", "sampling", "across_hosts", "planning", "reliability", "api"):
        assert (out / f"{page}.html").is_file(), page
    api = (out / "api.html").read_text(encoding="utf-8")
    for name in ("pyg_sar.init", "pyg_sar.distribute", "pyg_sar.load_partition",
                 "pyg_sar.PartitionData", "pyg_sar.convert", "pyg_sar.unconvert",
                 "pyg_sar.SARConfig", "pyg_sar.DistGraph", "pyg_sar.print", "pyg_sar.log",
                 "pyg_sar.barrier", "pyg_sar.global_sum", "pyg_sar.nn.functional.cross_entropy",
                 "pyg_sar.nn.functional.nll_loss", "pyg_sar.nn.functional.accuracy",
                 "pyg_sar.compression.Compressor", "pyg_sar.sampling.BulkNeighborLoader"):
        assert f'id="{name}"' in api, f"the API reference has no entry {name}"
    porting = (out / "porting.html").read_text(encoding="utf-8")
    assert "port-diff" in porting and porting.count('class="hll"') >= 2, (
        "the porting page lacks the side-by-side diff with its highlighted lines")


def test_porting_diff_is_the_diff_of_the_example():
    """docs/porting/gcn.diff, applied backwards to examples/gcn.py, gives PyG's original (its
    recorded SHA-256), and is exactly the diff of the two: the page cannot drift from the
    example. Regenerate with ``python docs/_ext/portdiff.py PYG/examples/gcn.py --commit SHA``."""
    pd = _ext("portdiff")
    diff = (DOCS / "porting" / "gcn.diff").read_text(encoding="utf-8")
    port = (ROOT / "examples" / "gcn.py").read_text(encoding="utf-8")
    meta, _ = pd.parse(diff)
    try:
        original = pd.original_text(diff, port)
    except ValueError as err:
        pytest.fail(f"docs/porting/gcn.diff no longer applies to examples/gcn.py: {err}")
    assert pd.sha256(original) == meta["sha"], (
        "examples/gcn.py changed outside the recorded diff: regenerate docs/porting/gcn.diff")
    assert pd.make_diff_file(original, port, "gcn", meta["commit"]) == diff
    assert pd.changed_lines(diff) <= 10  # lines removed plus lines added


def test_portdiff_rebuilds_and_refuses():
    pd = _ext("portdiff")
    original = "a\nb\nc\nd\ne\nf\ng\nh\n"
    port = "a\nB\nc\nd\ne\nf\ng\nh\nI\n"
    diff = pd.make_diff_file(original, port, "x", "abc1234")
    assert pd.original_text(diff, port) == original
    assert pd.changed_lines(diff) == 3
    left, right, hl_left, hl_right = pd.side_by_side(diff)[0]
    assert len(left) == len(right) and left[hl_left[0] - 1] == "b" and right[hl_right[0] - 1] == "B"
    with pytest.raises(ValueError, match="regenerate"):
        pd.original_text(diff, port.replace("c\n", "C\n"))
    with pytest.raises(ValueError, match="first line"):
        pd.parse(diff.split("\n", 1)[1])


def test_readme_is_a_short_front_page():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines (at most 150)"
    # First the two commands that work on a fresh machine (set up and run the main job; run
    # the tests), exactly as the getting-started page gives them and as .ci/run runs the
    # second; then how a user installs the package into an environment of their own.
    start = (DOCS / "getting_started.md").read_text(encoding="utf-8")
    commands = re.search(r"```bash\n(# 1\..*?# 2\..*?)```", start, re.S).group(1)
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert text.index("```bash") < 300
    assert blocks[0] == commands
    test_command = commands.split("# 2.", 1)[1].split("\n", 1)[1].strip()
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install = blocks[1]
    assert install.index("pip install torch") < install.index("pip install '.[all]'")
    assert "mpiexec -n 2 python -m pyg_sar.train" in install
    # Every relative link resolves to a file of the repository.
    for target in re.findall(r"\]\((?!https?://|#)([^)#\s]+)", text):
        assert (ROOT / target).exists(), f"README.md links to a missing file: {target}"
    assert "benchmarks/README.md" in text and "CHANGELOG.md" in text
    # The layer counts quoted in the feature table are the zoo's (docs/supported_layers.md).
    zoo = re.search(r"(\d+) exact, (\d+) refused",
                    (DOCS / "supported_layers.md").read_text(encoding="utf-8"))
    assert f"({zoo[1]} exact, {zoo[2]} refused configurations" in text, (
        f"README.md's feature table must quote the zoo's {zoo[1]} exact, {zoo[2]} refused")


def test_no_reference_to_documents_outside_the_repository():
    pattern = re.compile(r"\bDESIGN\b|design document|shared/(DESIGN|REVIEW|STYLE)")
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "README.md",
             *DOCS.rglob("*.md"), *DOCS.rglob("*.rst"), *DOCS.rglob("*.py"),
             *(ROOT / "pyg_sar").rglob("*.py"), *(ROOT / "csrc").rglob("*.[ch]*")]
    hits = [f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
            for path in files if path.is_file()
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if pattern.search(line)]
    assert not hits, "references to documents outside the repository:\n" + "\n".join(hits)


def test_readme_headline_figures_are_generated_from_the_results():
    hl = _ext("headline")
    section = hl.marked((ROOT / "README.md").read_text(encoding="utf-8"))
    assert section is not None, f"README.md lacks the {hl.BEGIN} ... {hl.END} markers"
    assert section == hl.headline_table(), (
        "README.md's headline figures differ from benchmarks/results: run "
        "python docs/_ext/headline.py --write")


def _code_block(path: Path, after: str = "") -> str:
    text = path.read_text(encoding="utf-8")
    return re.search(re.escape(after) + r".*?```python\n(.*?)```", text, re.S).group(1)


_SCRIPTS = {  # the docs' complete scripts: where, its epoch loop, a shorter loop for the test
    "readme": (ROOT / "README.md", "", "range(200)", "range(40)"),
    "getting_started": (DOCS / "getting_started.md", "## A first script", "range(1, 201)",
                        "range(1, 41)"),
}


@pytest.mark.parametrize("name, ranks", [("readme", 2), ("getting_started", 1)])
def test_docs_scripts_run(tmp_path, name, ranks):
    """The complete scripts of the README and the getting-started page run as written (fewer
    epochs) and learn Cora: the README's on 2 ranks under mpiexec, the other as one process."""
    path, after, loop, shorter = _SCRIPTS[name]
    code = _code_block(path, after)
    assert code.count(loop) == 1, f"{name}: the epoch loop {loop} was not found"
    script = tmp_path / f"{name}.py"
    script.write_text(code.replace(loop, shorter), encoding="utf-8")
    argv = [sys.executable, str(script)]
    if ranks > 1:
        mpiexec = Path(sys.executable).with_name("mpiexec")
        if not mpiexec.exists():
            pytest.skip("mpiexec is not installed next to the interpreter")
        argv = [str(mpiexec), "-n", str(ranks), *argv]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, f"{name} on {ranks} rank(s):\n{proc.stderr[-4000:]}"
    found = re.findall(r"test accuracy (\d\.\d+)", proc.stdout)
    assert len(found) == 1, f"{name}: expected one line, from rank 0, got:\n{proc.stdout}"
    assert float(found[0]) > 0.6, f"{name} on {ranks} rank(s) did not learn: {found[0]}"
