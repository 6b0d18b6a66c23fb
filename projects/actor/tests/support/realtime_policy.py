"""The small policy the real-time brain's tests run, and its saved checkpoint with shared memory
(shared so the test files cannot drift)."""

from __future__ import annotations

import multiprocessing
from multiprocessing.synchronize import Condition
from pathlib import Path

import torch

from navi_actor.checkpoints import Checkpoint, save_checkpoint
from navi_actor.memory import VisitMemoryConfig
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.service.realtime_shared import SharedLayout, SharedState

#: PolicyConfig fields of a tiny GRU policy on a 32 x 8 sensor
SMALL_REALTIME_POLICY: dict[str, int | str] = {
    "azimuth": 32,
    "elevation": 8,
    "embed_dim": 32,
    "vit_dim": 32,
    "vit_layers": 1,
    "temporal_core": "gru",
}


def saved_chunk_policy(
    folder: Path, chunk: int = 3, seed: int = 2, visit_source: str | None = None
) -> tuple[NaviPolicy, Path, SharedLayout, Condition, SharedState]:
    """A seeded small policy with a ``chunk`` head saved in ``folder``, and a 2-drone shared block.

    ``visit_source``: the policy reads its visit memory from this source (``positions`` or
    ``frontiers``), with a projection no longer zero (as after training), so the poses matter.
    """
    torch.manual_seed(seed)
    reading = (
        {"visit_input": False}
        if visit_source is None
        else {
            "visit_input": True,
            "visits": VisitMemoryConfig(source=visit_source, write_every=1, exclusion_window=0),
        }
    )
    config = PolicyConfig(action_chunk=chunk, **SMALL_REALTIME_POLICY, **reading)  # type: ignore[arg-type]
    policy = NaviPolicy(config).eval()
    if policy.visit_projection is not None:
        with torch.no_grad():
            policy.visit_projection.weight.normal_(0.0, 2.0)
    path = save_checkpoint(Checkpoint(model=policy.state_dict(), policy_config=config), folder / "p.pt")
    layout = SharedLayout(drones=2, azimuth=32, elevation=8)
    condition = multiprocessing.get_context("spawn").Condition()
    return policy, path, layout, condition, SharedState(layout, condition)
