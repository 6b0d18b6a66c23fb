"""The frontier planner flying the real simulator on exact analytic scenes: it maps two rooms joined by
a door completely within a step budget, never collides in a corridor, and keeps the planner interface
(reset by mask or index, actions in [-1, 1], idle with nothing left to explore)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings, SensorSettings
from navi_environment.planning import FrontierPlanner
from navi_environment.planning.occupancy import FREE, UNKNOWN
from navi_environment.runtime.analytic import (
    RoomSpec,
    corridor_spec,
    room_distance,
    room_ray_distance,
    room_scene,
)
from navi_environment.tracer import sensor_directions

# Two rooms (6 x 8 m and 4 x 8 m) joined by a 2.5 m door in a 0.3 m wall, with a pillar in the first.
TWO_ROOMS = RoomSpec(
    hi=(10.0, 8.0, 3.0), thin_wall_x=6.0, thin_wall_thickness=0.3, thin_wall_gap=(3.0, 5.5),
    pillars=((3.0, 4.0, 0.4),),
)  # fmt: skip
CORRIDOR = corridor_spec()  # 20 x 2 x 3 m
BOX = RoomSpec(lo=(-3.0, -2.0, 0.0), hi=(3.0, 2.0, 3.0))
SETTINGS = EnvironmentSettings(sensor=SensorSettings(azimuth_bins=64, elevation_bins=16))
MAP_BUDGET_STEPS = 150  # the two rooms are mapped well within this (37-59 steps over seeds 0-7)


@dataclass
class Flight:
    positions: np.ndarray  # [T, 3] pose before each step
    collisions: int
    coverage: float  # environment visit cells at the end
    mapped_at: int | None  # first step with no frontier left (None: never)
    planner: FrontierPlanner


def fly(scene_spec: RoomSpec, seed: int, steps: int) -> Flight:
    env = SdfDagBackend(SETTINGS, 1, scenes=[room_scene(scene_spec, 64)])
    obs = env.reset(seed)
    planner = FrontierPlanner(SETTINGS, 1)
    positions, collisions, mapped_at = [], 0, None
    for step in range(steps):
        position, yaw = env.poses()
        action = planner.act(obs, position, yaw)
        assert action.shape == (1, 4) and float(action.abs().max()) <= 1.0
        out = env.step(action)
        assert not bool(out.terminated[0] | out.truncated[0])
        obs = out.obs
        positions.append(position[0].numpy())
        collisions += int(out.info["collision"][0] > 0)
        plan = planner.plans[0]
        if mapped_at is None and (plan.sweep or plan.idle):
            mapped_at = step
    return Flight(np.array(positions), collisions, float(out.info["coverage"][0]), mapped_at, planner)


def box_observation(position: np.ndarray, yaw: float, azimuth_bins: int, elevation_bins: int) -> torch.Tensor:
    """[1, 3, Az, El] what the sensor sees from ``position`` inside the plain 6 x 4 x 3 m box ``BOX``."""
    local = sensor_directions(azimuth_bins, elevation_bins).astype(np.float64)
    c, s = math.cos(yaw), math.sin(yaw)
    world = np.stack([c * local[:, 0] - s * local[:, 1], s * local[:, 0] + c * local[:, 1], local[:, 2]], 1)
    t = room_ray_distance(BOX, position, world)
    horizon = SETTINGS.sensor.horizon_m
    obs = np.stack([np.minimum(t / horizon, 1.0), np.zeros_like(t), (t < horizon).astype(np.float64)])
    return torch.from_numpy(obs.astype(np.float32).reshape(1, 3, azimuth_bins, elevation_bins))


def true_clearance(spec: RoomSpec, planner: FrontierPlanner) -> np.ndarray:
    """[N, N] signed distance from drone 0's map cell centres, at its flight height, to the scene's
    surfaces (positive in free space): ground truth the planner never sees."""
    maps = planner.maps
    centres = (np.arange(maps.size) + 0.5) * maps.cell_m
    origin = maps.origin[0].numpy()
    x, y = np.meshgrid(origin[0] + centres, origin[1] + centres)
    points = np.stack([x.ravel(), y.ravel(), np.full(x.size, float(maps.z0[0]))], axis=1)
    sdf, _ = room_distance(spec, points)
    return sdf.reshape(x.shape)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 5])
def test_two_rooms_are_mapped_completely_within_the_step_budget(seed: int) -> None:
    flight = fly(TWO_ROOMS, seed, MAP_BUDGET_STEPS)
    assert flight.collisions == 0
    # Complete = no reachable frontier left, >= 95 % of the cells 0.6 m clear of every surface mapped
    # free, both rooms entered; then the planner sweeps for unvisited cells.
    assert flight.mapped_at is not None and flight.mapped_at < MAP_BUDGET_STEPS
    clearance = true_clearance(TWO_ROOMS, flight.planner)
    grid = flight.planner.maps.grid[0].numpy()
    assert (clearance >= 0.6).sum() > 150
    assert (grid[clearance >= 0.6] == FREE).mean() >= 0.95
    assert (grid[clearance <= -0.6] == UNKNOWN).all()  # nothing inside walls or outside is invented
    x = flight.positions[:, 0]
    assert x.min() < 5.5 and x.max() > 6.5  # both rooms entered
    # visit cells (3D, 1 m) in 150 steps: 36-41 over seeds 0-3; a follower that braked at every
    # frontier goal (arrival from 1.5 m/s, brake gain 2, cruise 4 m/s) reached 27-29
    assert flight.coverage >= 33


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_corridor_is_flown_end_to_end_without_collision(seed: int) -> None:
    flight = fly(CORRIDOR, seed, 300)
    assert flight.collisions == 0
    x = flight.positions[:, 0]
    assert x.max() - x.min() > 12.0  # it really travels along the corridor, both ways from its spawn
    assert flight.coverage >= 25  # of the 40 visit cells of a 20 x 2 m corridor
    assert np.ptp(flight.positions[:100, 2]) < 0.1  # it holds its height (until it tries another layer)
    # it travels, not creeps: 2.3-2.5 m/s over seeds 0-3 (braking at every goal: 1.3-1.5 m/s)
    speed = np.linalg.norm(np.diff(flight.positions[:, :2], axis=0), axis=1) / SETTINGS.physics.dt
    assert speed.mean() >= 2.0


def test_reset_by_mask_or_index_and_idle_when_everything_is_known() -> None:
    settings = EnvironmentSettings(sensor=SensorSettings(azimuth_bins=128, elevation_bins=32))
    planner = FrontierPlanner(settings, 2, cell_m=0.5, sweep=False, layers=False)  # one view closes each wall
    position = torch.tensor([[0.1, 0.2, 1.5], [0.3, -0.4, 1.5]])
    yaw = torch.tensor([0.0, 2.0])
    pairs = zip(position, yaw, strict=True)
    views = [box_observation(p.double().numpy(), float(a), 128, 32) for p, a in pairs]
    obs = torch.cat(views)
    action = planner.act(obs, position, yaw)
    assert action.shape == (2, 4) and torch.equal(action, torch.zeros(2, 4))  # the whole box is in view
    assert all(plan.idle for plan in planner.plans)
    assert (planner.maps.grid == FREE).sum() > 100
    planner.reset(torch.tensor([False, True]))
    assert planner.fresh.tolist() == [False, True]
    planner.reset(torch.tensor([0]))
    assert planner.fresh.tolist() == [True, True]
    planner.act(obs, position, yaw)
    assert not planner.fresh.any()
    sweeping = FrontierPlanner(settings, 2, cell_m=0.5, layers=False)  # it visits cells it has not been in
    assert float(sweeping.act(obs, position, yaw).abs().sum()) > 0.1
    climbing = FrontierPlanner(settings, 2, cell_m=0.5, sweep=False)  # nothing left at 1.5 m: another layer
    vertical = climbing.act(obs, position, yaw)[:, 1]
    assert (vertical.abs() > 0.1).all() and climbing.layers == [[1, 2], [1, 2]]
    assert torch.allclose(climbing.maps.z0, torch.tensor([2.25, 2.25]))  # middle of [2, 3 - 0.3 - 0.2]
    half = 0.5 * planner.maps.size * planner.maps.cell_m
    jumped = position + torch.tensor([[3.0, 0.0, 0.0], [0.1, 0.0, 0.0]])  # drone 0 respawned unannounced
    planner.act(obs, jumped, yaw)
    assert torch.allclose(planner.maps.origin, torch.stack([jumped[0, :2], position[1, :2]]) - half)
    with pytest.raises(ValueError, match="unknown frontier planner settings"):
        FrontierPlanner(settings, 1, speed=3.0)


def test_a_planner_following_the_drones_height_never_asks_it_to_climb_back() -> None:
    """``follow_height`` (DAgger's labeller): a drone found 0.8 m above the height its map started at
    is told to descend by the default planner, and to stay at its height by the following one, whose
    slab moved with it and so keeps mapping free space."""
    settings = EnvironmentSettings(sensor=SensorSettings(azimuth_bins=128, elevation_bins=32))
    start = torch.tensor([[0.1, 0.2, 1.5]])
    higher = torch.tensor([[0.1, 0.2, 2.3]])
    yaw = torch.tensor([0.0])
    low_view = box_observation(start[0].double().numpy(), 0.0, 128, 32)
    high_view = box_observation(higher[0].double().numpy(), 0.0, 128, 32)
    vertical = {}
    for follow in (False, True):
        planner = FrontierPlanner(settings, 1, cell_m=0.5, layers=False, follow_height=follow)
        planner.act(low_view, start, yaw)
        planner.maps.grid.fill_(UNKNOWN)  # forget the first view: what is mapped now is mapped from above
        action = planner.act(high_view, higher, yaw)
        vertical[follow] = float(action[0, 1])
        mapped = int((planner.maps.grid == FREE).sum())
        assert mapped > 50 if follow else mapped == 0  # outside its slab the default maps no free space
        assert float(planner.maps.z0[0]) == pytest.approx(2.3 if follow else 1.5)
    assert vertical[False] < -0.1 and vertical[True] == 0.0


@pytest.mark.parametrize(
    ("yaw", "row_side", "column_side"), [(0.0, 0, 1), (math.pi, 0, -1), (0.5 * math.pi, 1, 0)]
)
def test_the_turn_cost_picks_the_frontier_it_faces(yaw: float, row_side: int, column_side: int) -> None:
    """Unknown strips left and right of a mapped room, at equal path cost: the default planner takes the
    nearest frontier cells, level with the drone, whatever its heading; with ``turn_weight_m`` it takes
    the side it faces, and facing +y (both sides a quarter turn away) cells a little further towards +y."""
    grid = np.full((21, 21), FREE, dtype=np.int8)
    grid[:, :2] = UNKNOWN
    grid[:, -2:] = UNKNOWN
    start = (10, 10)  # (row, column); rows grow with y, columns with x
    r, c = np.ogrid[:21, :21]
    reach_m = np.hypot(r - start[0], c - start[1]) * 0.25
    reach_m[:, :2] = reach_m[:, -2:] = np.inf  # unknown cells are not reachable
    box = (slice(0, 21), slice(0, 21))
    plain = FrontierPlanner(SETTINGS, 1, layers=False)
    default_goal = plain._best_frontier(0, box, grid, reach_m, plain._turn_cost(grid.shape, start, yaw))
    assert default_goal is not None and default_goal[0] == start[0]
    turning = FrontierPlanner(SETTINGS, 1, layers=False, turn_weight_m=1.0)
    goal = turning._best_frontier(0, box, grid, reach_m, turning._turn_cost(grid.shape, start, yaw))
    assert goal is not None
    assert int(np.sign(goal[0] - start[0])) == row_side
    if column_side:
        assert int(np.sign(goal[1] - start[1])) == column_side
