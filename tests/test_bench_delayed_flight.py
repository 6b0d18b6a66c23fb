"""scripts/bench_delayed_flight.py's flight with ``--guard``: the collision guard caps what a delayed
chunked brain flies, from each tick's observation, so a small policy that cruises into the walls of a
closed room (sideways, where the physics' own obstacle-ahead limiter does not act) collides without it
and never with it."""

from __future__ import annotations

import pytest
import torch
from realtime_policy import SMALL_REALTIME_POLICY
from script_module import load_script

from navi_actor.models import NaviPolicy, PolicyConfig
from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings
from navi_environment.planning.guard import SpeedGuard
from navi_environment.runtime.analytic import RoomSpec, room_scene


@pytest.mark.slow
def test_the_guard_keeps_a_delayed_flight_off_the_walls() -> None:
    bench = load_script("bench_delayed_flight")
    torch.manual_seed(0)
    policy = NaviPolicy(PolicyConfig(visit_input=False, action_chunk=6, **SMALL_REALTIME_POLICY)).eval()  # type: ignore[arg-type]
    with torch.no_grad():  # a mean of 0.3 forward and full speed sideways, whatever it sees
        policy.actor.mean.weight.zero_()
        policy.actor.mean.bias.copy_(torch.tensor([0.3, 0.0, 1.0, 0.0]))
    sensor = {"azimuth_bins": 32, "elevation_bins": 8}
    settings = EnvironmentSettings(sensor=sensor)  # type: ignore[arg-type]
    backend = SdfDagBackend(settings, 4, scenes=[room_scene(RoomSpec(hi=(5.0, 4.0, 3.0)), 64)])
    backend.reset(0)
    plan = backend.sample_starts(0, 4, 0)
    guard = SpeedGuard(settings, "cpu")
    with torch.inference_mode():
        free = bench.fly(policy, backend, plan, ticks=80, delay=3, variant="chunks_blend")
        guarded = bench.fly(policy, backend, plan, ticks=80, delay=3, variant="chunks_blend", guard=guard)
    assert free["guarded_fraction"] == 0.0
    assert free["collision_rate"] > 0.0  # the same flight does reach the walls
    assert guarded["collision_rate"] == 0.0
    assert 0.0 < guarded["guarded_fraction"] <= 1.0
