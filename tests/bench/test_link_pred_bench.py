"""benchmarks/link_pred.py: the tables in benchmarks/README.md and docs/link_prediction.md are
the ones its committed results JSON gives (regenerate with ``--write-docs``), and the JSON holds
every cell the docs describe."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("link_pred_bench",
                                                  ROOT / "benchmarks" / "link_pred.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_tables_are_the_results():
    bench = _bench()
    result = json.loads(bench.RESULT_JSON.read_text())
    table = bench.table(result)
    for path in bench.DOC_FILES:
        text = path.read_text(encoding="utf-8")
        section = text.split(bench.BEGIN, 1)[1].split(bench.END, 1)[0]
        assert section.strip() == table.strip(), (
            f"{path.relative_to(ROOT)}: table differs from {bench.RESULT_JSON.name}; run "
            f"python benchmarks/link_pred.py --write-docs")


def test_results_cover_both_datasets_and_every_p():
    result = json.loads(_bench().RESULT_JSON.read_text())
    assert set(result["runs"]) == {"cora", "citeseer"}
    for rows in result["runs"].values():
        assert [(r["reference"], r["ranks"]) for r in rows] == [
            (True, 1), (False, 1), (False, 2), (False, 4)]
        ref = rows[0]
        for r in rows[1:]:
            # the same pairs and model: float32 rounding apart
            assert abs(r["test_auc"] - ref["test_auc"]) < 2e-3, (r, ref)
            assert len(r["peak_rss_mb"]) == r["ranks"]
