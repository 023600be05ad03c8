"""The test suite as a package: a test file, a helper module (``*_cases.py``,
``tests/closeness.py``) or a rank process imports a helper as
``from tests.<folder> import <module>``. The repository root is on ``sys.path`` through pytest's
``pythonpath`` (pyproject.toml) in the test process, and through ``PYTHONPATH`` in the processes
it launches (``pyg_sar.testing.run_on_ranks`` sets it; the tests that start ``python``
themselves set it in the child's environment)."""
