"""The planner's fitted constants are documented defaults with a provenance: the values shipped
in ``pyg_sar.plan.CONSTANTS`` are exactly the fit that ``benchmarks/plan_validation.py`` recorded
in ``benchmarks/results/plan_validation.json`` (``predict(constants=...)`` takes a user's own)."""
from __future__ import annotations

import json
from pathlib import Path

from pyg_sar.plan import CONSTANTS

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "plan_validation.json"


def test_shipped_constants_are_the_recorded_fit():
    fit = json.loads(RESULTS.read_text())["fit"]
    fit.pop("metis_halo_ratio_range", None)  # reported, not a constant
    assert CONSTANTS == fit
