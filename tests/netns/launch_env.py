"""The environment the supervised multi-host launches of tests/netns start their ranks with."""
from __future__ import annotations

import os
from pathlib import Path

from pyg_sar.testing.netns import MPI_ENV

ROOT = Path(__file__).resolve().parents[2]
# Fast supervision so that a dead or killed rank ends the job within the tests' limits.
SUPERVISION = {"PYG_SAR_HEARTBEAT_S": "1", "PYG_SAR_DEAD_AFTER_S": "8",
               "PYG_SAR_FAILURE_GRACE_S": "10"}


def launch_env() -> dict:
    """This process's environment without any launcher's variables (a rank must take its
    place from the launch under test), plus one thread, unbuffered output, MPI over TCP,
    :data:`SUPERVISION` and the checkout on ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK",
                        "GLOO_SOCKET_IFNAME")
           and not k.startswith(("PMI_", "HYDRA_", "TORCHELASTIC_"))}
    return dict(env, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", **MPI_ENV, **SUPERVISION,
                PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p))
