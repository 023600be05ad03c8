"""Shared pytest setup. The repository root is on ``sys.path`` through pytest's ``pythonpath``
(pyproject.toml), so ``pyg_sar`` and the test helpers (``tests.<folder>.<module>``) import
without installing anything."""
import os
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])

# The suite runs against the built package: the native kernels must load (no silent fallback to
# the pure-torch reference). Set PYG_SAR_REQUIRE_NATIVE=0 to run it without a build.
os.environ.setdefault("PYG_SAR_REQUIRE_NATIVE", "1")


import pytest  # noqa: E402 - after the environment is set

# The second tier: the exhaustive and slow cases (the full zoo per dtype, the example scripts
# end to end, namespace hosts, failure injection, the CLIs' long runs). The README's test
# command runs the first tier (`pytest -m "not full"`, a few minutes on 2 cores); `.ci/run`
# runs it, then this one (`pytest -m full`). A file or folder is listed whole, so a launch
# shared by the tests of one file never runs in both tiers.
FULL_TIER = (
    "tests/zoo/test_zoo_bf16.py",           # the whole zoo again in bfloat16
    "tests/zoo/test_zoo_hetero.py",         # the heterogeneous zoo
    "tests/examples/test_examples.py",      # every example script end to end, 1 and 2 ranks
    "tests/examples/test_port_exactness.py",
    "tests/examples/test_link_examples.py",
    "tests/examples/test_hetero_example.py",
    "tests/examples/test_graph_transformer_example.py",
    "tests/train/test_train_cli_errors.py",  # the CLI's many failing launches
    "tests/train/test_train_interrupt.py",
    "tests/train/test_train_progress.py",
    # namespace hosts: the harness's own tests and the exactness across hosts (13 s) run in
    # the first tier; training, faults, restarts, memory limits and Slurm here
    "tests/netns/test_memory_limited_hosts.py",
    "tests/netns/test_netns_faults.py",
    "tests/netns/test_netns_restart.py",
    "tests/netns/test_netns_training.py",
    "tests/netns/test_slurm.py",
    "tests/netns/test_slurm_requeue.py",
    # failure injection (its witness, checkpoint-file and bad-input tests, a few seconds, run
    # in the first tier)
    "tests/reliability/test_rel_elastic.py",
    "tests/reliability/test_rel_fuzz.py",
    "tests/reliability/test_rel_join.py",
    "tests/reliability/test_rel_rank_failure.py",
    "tests/reliability/test_rel_reshard.py",
    "tests/reliability/test_rel_reshard_cli.py",
    "tests/reliability/test_rel_resume.py",
    "tests/reliability/test_rel_stress.py",
    "tests/distributed/test_gloo_clean_exit.py",
    "tests/distributed/test_slurm_env.py",
    "tests/docs/",                          # the Sphinx build and the documented scripts
    "tests/bench/",
    "tests/precision/",
    "tests/setup_script/",
    "tests/test_wheel_contents.py",         # builds and runs the package outside the tree
    # The exhaustive matrices and the second and further launches of an area whose first tier
    # keeps a representative (per-file times of a first-tier run: docs/development.md; the link,
    # heterogeneous, partition, predict, sampling and plan files came back to the first tier
    # when its line coverage was measured 18 points below the whole suite's). Files
    # that share a launch (tests/core, tests/compression and tests/api conftest.py; gloo3_launch
    # below) stay together: moving one would start the launch in both tiers.
    "tests/zoo/test_zoo.py",                # every zoo recipe at P = 1, 3 (the first tier
                                            # converts each in test_save_load / refusals)
    "tests/api/test_unconvert.py",          # unconvert of the zoo: test_refusal_leaves_model
    # One shared launch per P (tests/compression/conftest.py), 61 s of a first tier that ran
    # 9 min 25 s in one clean clone and 10 min 45 s in the next; the codecs, the compressor,
    # error feedback and the wire dtype stay in the first tier, in one process.
    "tests/compression/test_compression_ranks.py",
    "tests/compression/test_wire.py",
    "tests/ops/test_opcheck.py",            # torch.library.opcheck of every op (32 s)
    "tests/ops/test_cuda_compiles.py",      # nvcc over every CUDA file
    "tests/gpu/test_gpu_script.py",
    "tests/gpu/test_multi_rank_device.py",
    "tests/distributed/test_rank_launcher.py",
    "tests/distributed/test_comm_primitives.py",  # test_dist_bootstrap stays
    "tests/partition/test_link_split_forms.py",   # the zoo of RandomLinkSplit forms
    "tests/nn/test_linear_attention.py",  # test_ring_attention stays
    "tests/nn/test_gps.py",
    "tests/nn/test_custom_aggregate.py",
    "tests/api/test_convert_before_init.py",  # its own mpiexec launch
    # Single tests (node ids): bf16 has its own tier-two suites (tests/precision, the bf16 zoo).
    "tests/train/test_train_cli.py::test_two_ranks_with_bf16_on_the_wire_and_bf16_mixed",
    "tests/train/test_train_cli.py::test_one_rank_bf16_true_learns_and_resumes",
)


def pytest_collection_modifyitems(config, items):
    """Marks the second tier: an item whose file path, or whose node id (``path::test``), starts
    with an entry of :data:`FULL_TIER`."""
    root = Path(ROOT)
    for item in items:
        try:
            rel = Path(str(item.fspath)).resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        node_id = rel + item.nodeid[item.nodeid.index("::"):] if "::" in item.nodeid else rel
        if node_id.startswith(FULL_TIER):
            item.add_marker(pytest.mark.full)


@pytest.fixture(autouse=True)
def _no_context_leaks_between_tests():
    """A test that computes on a DistGraph in the pytest process creates the default
    single-process context (as a user's script would). Shut it down after the test, so the
    next test starts as a fresh process would: load_partition checks a P-part folder against
    the context's world size."""
    yield
    import pyg_sar
    if pyg_sar.get_context() is not None:
        pyg_sar.shutdown()


@pytest.fixture(scope="session")
def gloo3_launch(tmp_path_factory) -> dict[str, list]:
    """Name -> the ranks' results of the P = 3 cases that need torch.distributed's gloo group
    under plain processes (``launcher="spawn"``): DDP (tests/core/test_engine_helpers.py), the
    reductions (tests/core/test_reduce.py) and the label one-hot
    (tests/nn/test_model_adapters.py) run in one launch instead of three, each on its own
    partition (built by each test file's ``gloo3_call``), each test reading its own result."""
    from pyg_sar.testing import run_on_ranks
    from tests.core import test_engine_helpers, test_reduce
    from tests.nn import test_model_adapters

    root = tmp_path_factory.mktemp("gloo3")
    calls = [module.gloo3_call(root / name) for name, module in (
        ("ddp", test_engine_helpers), ("reductions", test_reduce),
        ("label_classes", test_model_adapters))]
    cases = Path(__file__).resolve().parent / "core" / "shared_launch_cases.py"
    ranks = run_on_ranks(f"{cases}:several", 3, launcher="spawn", backend="gloo", timeout=600,
                         kwargs={"calls": calls})
    return {name: [res[name] for res in ranks] for name, *_ in calls}
