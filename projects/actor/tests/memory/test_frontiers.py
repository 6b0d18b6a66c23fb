"""FrontierMemory: in which direction sector the drone's nearest unexplored space lies, from its own map
of the depth rays, on exact analytic rooms traced by the real sensor."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from navi_actor.memory import VisitMemoryConfig
from navi_actor.memory.frontiers import (
    FrontierMemory,
    _frontier_cells_torch,
    frontier_cells,
    new_visit_reader,
)
from navi_actor.memory.grid_paths import grid_path_lengths
from navi_actor.memory.visits import VisitMemory, mirror_visit_features
from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings, SensorSettings
from navi_environment.planning.occupancy import FREE, OCCUPIED, UNKNOWN
from navi_environment.runtime.analytic import RoomSpec, room_scene

SETTINGS = EnvironmentSettings(sensor=SensorSettings(azimuth_bins=64, elevation_bins=16))
FULL_SENSOR = EnvironmentSettings(sensor=SensorSettings(azimuth_bins=256, elevation_bins=48))
FRONTIERS = VisitMemoryConfig(source="frontiers", frontier_distance="straight")
# Two rooms (6 x 8 m and 4 x 8 m) joined by a 2.5 m door (y 3 to 5.5) in a 0.3 m wall at x = 6.
TWO_ROOMS = RoomSpec(hi=(10.0, 8.0, 3.0), thin_wall_x=6.0, thin_wall_thickness=0.3, thin_wall_gap=(3.0, 5.5))
MIRROR_BOX = RoomSpec(lo=(-4.0, -2.0, 0.0), hi=(4.0, 2.0, 3.0))
SMALL_BOX = RoomSpec(lo=(-2.0, -1.5, 0.0), hi=(2.0, 1.5, 3.0))  # every point within 2.5 m of its centre


@pytest.fixture(scope="module")
def two_rooms() -> SdfDagBackend:
    return SdfDagBackend(SETTINGS, 1, scenes=[room_scene(TWO_ROOMS, 64)])


def seen_from(env: SdfDagBackend, position: tuple[float, float, float], yaw: float) -> torch.Tensor:
    """The first observation [1, 3, Az, El] of a drone placed at ``position`` facing ``yaw``."""
    where = torch.tensor([position])
    return env.start_episodes(torch.tensor([0]), torch.tensor([0]), where, torch.tensor([yaw])).clone()


def observed(
    env: SdfDagBackend, position: tuple[float, float, float], yaw: float, cfg: VisitMemoryConfig = FRONTIERS
) -> torch.Tensor:
    """Features [F] of a fresh one-drone frontier memory after one observation there."""
    memory = FrontierMemory(cfg, 1, 64, 16)
    obs = seen_from(env, position, yaw)
    return memory.observe(torch.tensor([position]), torch.tensor([yaw]), torch.tensor([True]), obs)[0]


def test_once_the_first_room_is_flown_the_door_is_the_frontier_in_its_sector(
    two_rooms: SdfDagBackend,
) -> None:
    memory = FrontierMemory(FRONTIERS, 1, 64, 16)
    start = torch.tensor([True])
    for x, y in ((1.5, 1.5), (1.5, 4.25), (1.5, 7.0), (4.5, 1.5), (4.5, 7.0), (4.5, 4.25)):  # room 1 swept
        obs = seen_from(two_rooms, (x, y, 1.5), math.pi)
        features = memory.observe(torch.tensor([[x, y, 1.5]]), torch.tensor([math.pi]), start, obs)[0]
        start = torch.tensor([False])
    # facing -x, 1.5 m from the door: the second room, seen through it, lies behind (sector 4)
    assert float(features[4]) > math.exp(-3.5 / FRONTIERS.frontier_scale_m)
    assert float(features[[0, 1, 2, 6, 7]].max()) == 0.0  # the swept room ahead and beside: nothing left
    facing_door = seen_from(two_rooms, (4.5, 4.25, 1.5), 0.0)
    turned = memory.peek(torch.tensor([[4.5, 4.25, 1.5]]), torch.zeros(1), start, facing_door)
    torch.testing.assert_close(turned[0, 0], features[4], atol=0.02, rtol=0.0)  # facing the door: ahead


def test_a_lintel_seen_from_above_the_door_does_not_close_it_once_the_drone_is_lower() -> None:
    # the two rooms under a 2 m lintel: from 1.9 m it lies in the slab (the door is shut for that
    # height), from 1.0 m it does not; the map must open the door again, not keep it shut for good
    lintel = dataclasses.replace(TWO_ROOMS, thin_wall_door_top=2.0)
    env = SdfDagBackend(SETTINGS, 1, scenes=[room_scene(lintel, 64)])
    cfg = VisitMemoryConfig(source="frontiers")  # by path: a shut door hides the room behind it
    memory = FrontierMemory(cfg, 1, 64, 16)
    start = torch.tensor([True])
    for x, y, z in ((1.5, 1.5, 1.9), (1.5, 4.25, 1.9), (1.5, 7.0, 1.9), (4.5, 1.5, 1.9), (4.5, 7.0, 1.9),
                    (4.5, 4.25, 1.9), (4.5, 4.25, 1.0)):  # fmt: skip
        obs = seen_from(env, (x, y, z), math.pi)
        features = memory.observe(torch.tensor([[x, y, z]]), torch.tensor([math.pi]), start, obs)[0]
        start = torch.tensor([False])
        if z > 1.5:
            high = features
    assert float(high[:8].max()) == 0.0  # at 1.9 m the lintel shuts the door: nothing left by path
    assert float(features[4]) > math.exp(-3.5 / cfg.frontier_scale_m)  # at 1.0 m: through it, behind


@pytest.mark.parametrize(("settings", "cell_m"), [(SETTINGS, 0.5), (FULL_SENSOR, None)])
def test_a_room_seen_whole_within_sight_has_no_frontier_even_along_its_walls(
    settings: EnvironmentSettings, cell_m: float | None
) -> None:
    """On the default map with the real sensor, and on 0.5 m cells with a 64 x 16 sensor (whose rays lie
    0.29 m apart at the 3 m sight: on 0.25 m cells they leave unknown strips along the walls)."""
    env = SdfDagBackend(settings, 1, scenes=[room_scene(SMALL_BOX, 64)])
    cfg = FRONTIERS if cell_m is None else FRONTIERS.model_copy(update={"frontier_cell_m": cell_m})
    memory = FrontierMemory(cfg, 1, settings.sensor.azimuth_bins, settings.sensor.elevation_bins)
    obs = seen_from(env, (0.0, 0.0, 1.5), 0.3)
    features = memory.observe(
        torch.tensor([[0.0, 0.0, 1.5]]), torch.tensor([0.3]), torch.tensor([True]), obs
    )[0]
    assert float(features[:8].max()) == 0.0  # no strip beside a wall counts
    assert 0.5 < float(features[8]) < 1.0  # most of the 10 m disc lies outside the room: unmapped


def test_peek_returns_what_observe_would_and_leaves_the_map(two_rooms: SdfDagBackend) -> None:
    memory = FrontierMemory(FRONTIERS, 1, 64, 16)
    first = seen_from(two_rooms, (2.0, 2.0, 1.5), 0.0)
    memory.observe(torch.tensor([[2.0, 2.0, 1.5]]), torch.zeros(1), torch.tensor([True]), first)
    before = memory.grids.grid.clone()
    later = seen_from(two_rooms, (4.5, 4.25, 1.5), 0.0)
    pose = (torch.tensor([[4.5, 4.25, 1.5]]), torch.zeros(1))
    peeked = memory.peek(*pose, torch.tensor([False]), later)
    assert torch.equal(memory.grids.grid, before)
    torch.testing.assert_close(memory.observe(*pose, torch.tensor([False]), later), peeked)
    assert not torch.equal(memory.grids.grid, before)


def test_an_episode_start_forgets_the_map_of_its_row_only(two_rooms: SdfDagBackend) -> None:
    memory = FrontierMemory(FRONTIERS, 2, 64, 16)
    obs = torch.cat([seen_from(two_rooms, (2.0, 2.0, 1.5), 0.0)] * 2)
    pose = torch.tensor([[2.0, 2.0, 1.5]] * 2)
    memory.observe(pose, torch.zeros(2), torch.tensor([True, True]), obs)
    kept = memory.grids.grid[1].clone()
    there = torch.tensor([[8.0, 6.0, 1.5]] * 2)
    obs_there = torch.cat([seen_from(two_rooms, (8.0, 6.0, 1.5), 0.0)] * 2)
    features = memory.observe(there, torch.zeros(2), torch.tensor([True, False]), obs_there)
    fresh = FrontierMemory(FRONTIERS, 1, 64, 16)
    expected = fresh.observe(there[:1], torch.zeros(1), torch.tensor([True]), obs_there[:1])
    torch.testing.assert_close(features[:1], expected)  # row 0 starts over
    assert int((memory.grids.grid[1] != kept).sum()) > 0 and int((kept > 0).sum()) > 0  # row 1 adds on


@pytest.mark.parametrize(
    ("distance", "reading"), [("straight", "absolute"), ("path", "absolute"), ("path", "relative")]
)
def test_mirrored_features_are_those_of_the_mirrored_heading(distance: str, reading: str) -> None:
    env = SdfDagBackend(SETTINGS, 1, scenes=[room_scene(MIRROR_BOX, 64)])
    cfg = VisitMemoryConfig(source="frontiers", frontier_distance=distance, frontier_reading=reading)  # type: ignore[arg-type]
    left = observed(env, (1.0, 0.0, 1.5), 0.5, cfg)  # the box is symmetric about y = 0
    right = observed(env, (1.0, 0.0, 1.5), -0.5, cfg)
    assert float(left[:8].max()) > 0.0 and not torch.allclose(left, right)
    torch.testing.assert_close(mirror_visit_features(left[None], 8)[0], right, atol=1e-4, rtol=0.0)


def test_the_relative_reading_lights_the_nearest_frontiers_way_however_far_and_says_how_far(
    two_rooms: SdfDagBackend,
) -> None:
    """The same map read both ways: the relative sectors are the absolute ones divided by the
    largest (the nearest frontier's sector reads 1), and the extra feature is its distance on the
    radius's scale; a map with no frontier within the radius reads 0 in every sector and in it."""
    relative_cfg = FRONTIERS.model_copy(update={"frontier_distance": "path", "frontier_reading": "relative"})
    absolute_cfg = relative_cfg.model_copy(update={"frontier_reading": "absolute"})
    assert (absolute_cfg.features, relative_cfg.features) == (9, 10)
    memory = FrontierMemory(relative_cfg, 1, 64, 16)
    start = torch.tensor([True])
    for x, y in ((1.5, 1.5), (1.5, 4.25), (1.5, 7.0), (4.5, 1.5), (4.5, 7.0), (4.5, 4.25)):  # room 1 swept
        obs = seen_from(two_rooms, (x, y, 1.5), math.pi)
        memory.observe(torch.tensor([[x, y, 1.5]]), torch.tensor([math.pi]), start, obs)
        start = torch.tensor([False])
    far = torch.tensor([[1.5, 1.5, 1.5]])  # the corner farthest from the door: the frontiers lie behind it
    relative = memory.features(far, torch.zeros(1))[0]
    memory.cfg = absolute_cfg
    absolute = memory.features(far, torch.zeros(1))[0]
    largest = float(absolute[:8].max())
    assert 0.0 < largest < math.exp(-1.0)  # faint when read absolutely: more than 3 m away
    torch.testing.assert_close(relative[:8], absolute[:8] / largest, atol=1e-5, rtol=1e-4)
    assert float(relative[:8].max()) == pytest.approx(1.0)
    nearest = -relative_cfg.frontier_scale_m * math.log(largest)
    assert float(relative[9]) == pytest.approx(math.exp(-nearest / relative_cfg.frontier_radius_m), rel=1e-4)
    assert float(relative[8]) == float(absolute[8])  # the unmapped share, read alike
    empty = FrontierMemory(relative_cfg, 1, 64, 16).features(far, torch.zeros(1))[0]
    assert float(empty[:8].abs().max()) == 0.0 and float(empty[9]) == 0.0  # nothing mapped: no frontier


def test_the_source_setting_picks_the_memory_and_observe_needs_the_rays() -> None:
    assert isinstance(new_visit_reader(VisitMemoryConfig(source="positions"), 2, 64, 16), VisitMemory)
    frontiers = new_visit_reader(VisitMemoryConfig(), 2, 64, 16)  # the default
    assert isinstance(frontiers, FrontierMemory) and FRONTIERS.features == 9
    with pytest.raises(ValueError, match="pass obs"):
        frontiers.observe(torch.zeros(2, 3), torch.zeros(2), torch.ones(2, dtype=torch.bool))


def test_an_unknown_hole_inside_mapped_space_is_not_a_frontier_but_unknown_space_is() -> None:
    memory = FrontierMemory(FRONTIERS, 1, 64, 16)
    grid = memory.grids.grid
    grid[0, 10:30, 10:30] = FREE
    grid[0, 20, 20] = UNKNOWN  # one cell the rays missed, amid free cells: nothing to explore
    grid[0, 14:16, 14:16] = UNKNOWN  # a 2 x 2 pocket (4 cells): still a hole
    assert int(frontier_cells(grid)[0, 10:30, 10:30].sum()) == int(frontier_cells(grid).sum())
    inner = frontier_cells(grid)[0, 11:29, 11:29]
    assert int(inner.sum()) == 0  # only the free square's rim borders unknown space
    grid[0, 20:23, 20:23] = UNKNOWN  # a 3 x 3 unknown block (9 cells) is space to explore:
    # the free cells beside the middle of each of its sides are frontiers
    assert int(frontier_cells(grid)[0, 11:29, 11:29].sum()) == 4


@pytest.mark.parametrize(("settings", "cell_m"), [(SETTINGS, 0.5), (FULL_SENSOR, None)])
def test_by_path_a_frontier_behind_a_wall_does_not_count_and_the_door_sector_leads_to_it(
    settings: EnvironmentSettings, cell_m: float | None
) -> None:
    """Room 1 swept, a look into room 2 through the door (its lower and upper strips stay beyond
    sight: frontiers), then back to room 1's lower edge, the wall 1.35 m ahead (+x) and the door up
    to the left (bearing 64 degrees: between sectors 1 and 2). On the default map with the real
    sensor, and on 0.5 m cells with a 64 x 16 sensor."""
    env = SdfDagBackend(settings, 1, scenes=[room_scene(TWO_ROOMS, 64)])
    bins = (settings.sensor.azimuth_bins, settings.sensor.elevation_bins)
    cells = {} if cell_m is None else {"frontier_cell_m": cell_m}
    room_1 = ((1.5, 1.5), (1.5, 4.25), (1.5, 7.0), (4.5, 1.5), (4.5, 7.0), (4.5, 4.25))
    flight = (*room_1, (8.0, 4.25), (4.5, 1.2))
    read = {}
    for distance in ("straight", "path"):
        memory = FrontierMemory(
            VisitMemoryConfig(source="frontiers", frontier_distance=distance, **cells), 1, *bins
        )
        start = torch.tensor([True])
        for x, y in flight:
            obs = seen_from(env, (x, y, 1.5), 0.0)
            features = memory.observe(torch.tensor([[x, y, 1.5]]), torch.zeros(1), start, obs)[0]
            start = torch.tensor([False])
        read[distance] = features
    assert float(read["straight"][0]) > 0.3  # the straight line runs through the wall into room 2
    by_path = read["path"]
    assert int(by_path[:8].argmax()) in (1, 2)  # the door: 45-90 degrees
    if cell_m == 0.5:  # the cells before the wall lie inside the ring's first metre: no way out ahead
        assert float(by_path[0]) == 0.0
    else:  # 0.25 m cells: a way out ahead, 1.1 m on, then round through the door; never through the wall
        assert 0.0 < float(by_path[0]) < float(by_path[1]) and float(by_path[0]) < float(read["straight"][0])
    assert 0.0 < float(by_path[1]) < float(read["straight"][0])  # the way round through the door is longer


def test_grid_path_lengths_go_round_walls_diagonals_cost_root_two_and_stop_at_max_steps() -> None:
    passable = torch.ones(1, 5, 5, dtype=torch.bool)
    passable[0, 0:4, 2] = False  # a wall down column 2, open at the bottom row
    start = torch.full((1, 5, 5), math.inf)
    start[0, 0, 0] = 0.0
    length = grid_path_lengths(start, passable, 100)[0]
    root2 = math.sqrt(2.0)
    assert float(length[0, 1]) == 1.0 and float(length[1, 1]) == pytest.approx(root2)
    assert float(length[4, 2]) == pytest.approx(2.0 + 2 * root2)  # down to the gap: 2 diagonals
    assert float(length[0, 3]) == pytest.approx(5.0 + 3 * root2)  # through the gap, back up
    assert math.isinf(float(length[0, 2]))  # the wall itself
    short = grid_path_lengths(start, passable, 3)[0]
    assert float(short[3, 0]) == 3.0 and math.isinf(float(short[0, 3]))  # 3 relaxations: 3 cells out
    start[0, 4, 4] = 0.5  # a second start, half a cell on: each cell's nearest
    assert float(grid_path_lengths(start, passable, 100)[0, 4, 3]) == pytest.approx(1.5)


@pytest.mark.parametrize("door_shift", [0.0, 0.05, 0.25, 0.5])
def test_a_one_metre_door_stays_open_on_the_default_map_wherever_the_grid_cells_fall(
    door_shift: float,
) -> None:
    """Room 1 swept at the real sensor's resolution, then the drone beside a 1 m door under a 2 m lintel
    in a 0.2 m wall: the door is the way on. Hits on the door's jambs land inside the doorway, so on
    0.5 m cells a door whose edges meet the grid's (shifts 0, 0.05 and 0.5 m here) was shut."""
    gap = (3.0 + door_shift, 4.0 + door_shift)
    spec = RoomSpec(
        hi=(10.0, 8.0, 3.0),
        thin_wall_x=6.0,
        thin_wall_thickness=0.2,
        thin_wall_gap=gap,
        thin_wall_door_top=2.0,
    )
    env = SdfDagBackend(FULL_SENSOR, 1, scenes=[room_scene(spec, 64)])
    sensor = FULL_SENSOR.sensor
    memory = FrontierMemory(
        VisitMemoryConfig(source="frontiers"), 1, sensor.azimuth_bins, sensor.elevation_bins
    )
    start = torch.tensor([True])
    for x, y in ((1.5, 1.5), (1.5, 4.25), (1.5, 7.0), (4.5, 1.5), (4.5, 7.0), (4.5, gap[0] + 0.5)):
        obs = seen_from(env, (x, y, 1.5), math.pi)
        features = memory.observe(torch.tensor([[x, y, 1.5]]), torch.tensor([math.pi]), start, obs)[0]
        start = torch.tensor([False])
    assert int(features[:8].argmax()) == 4 and float(features[4]) > 0.3  # behind the drone: the door


def test_by_path_a_drone_touching_a_thin_wall_does_not_read_the_room_behind_it() -> None:
    """A map drawn by hand: a 20 m square mapped free, split by a one-cell wall from x 1.0 m; the
    drone 0.1 m from the wall faces it. The wall's cell lies within one cell of the drone, but paths
    never cross it: the sector facing the wall reads 0, the sector behind the drone its frontier."""
    cfg = VisitMemoryConfig(source="frontiers", frontier_distance="path")
    memory = FrontierMemory(cfg, 1, 64, 16)
    grids = memory.grids
    grids.reset(torch.tensor([0]), torch.tensor([[0.0, 0.0, 1.5]]))  # map centred on (0, 0)
    col_of = lambda x: int((x - float(grids.origin[0, 0])) // cfg.frontier_cell_m)  # noqa: E731
    row_of = lambda y: int((y - float(grids.origin[0, 1])) // cfg.frontier_cell_m)  # noqa: E731
    grids.grid[0, row_of(-10.0) : row_of(10.0), col_of(-10.0) : col_of(10.0)] = FREE
    grids.seen_free[0, row_of(-10.0) : row_of(10.0), col_of(-10.0) : col_of(10.0)] = True
    grids.grid[0, row_of(-10.0) : row_of(10.0), col_of(1.0)] = OCCUPIED  # the wall, one cell from x 1.0
    grids.hit_low[0, row_of(-10.0) : row_of(10.0), col_of(1.0)] = 1.0  # hit from 1.0 to 2.0 m high
    grids.hit_high[0, row_of(-10.0) : row_of(10.0), col_of(1.0)] = 2.0
    features = memory.features(torch.tensor([[0.9, 0.25, 1.5]]), torch.zeros(1))[0]
    assert float(features[0]) == 0.0  # ahead: the wall, and the room behind it is out of reach
    assert float(features[4]) > 0.0  # behind: the frontiers of the left half, on this side of the wall


@pytest.mark.parametrize("seed", range(4))
def test_the_frontier_test_kernel_finds_the_cells_its_torch_reference_finds(seed: int) -> None:
    """Random maps of blobs (holes, pockets and open space, touching the edges): the numba kernel
    used on CPU and the pooled torch reference used elsewhere mark exactly the same cells."""
    generator = torch.Generator().manual_seed(seed)
    coarse = torch.randint(0, 3, (3, 1, 9, 11), generator=generator).float()
    grid = torch.nn.functional.interpolate(coarse, size=(37, 41), mode="nearest")[:, 0].to(torch.int8)
    speckle = torch.rand(grid.shape, generator=generator) < 0.08
    grid = torch.where(speckle, UNKNOWN, grid).to(torch.int8)  # single holes amid mapped space
    ours, theirs = frontier_cells(grid), _frontier_cells_torch(grid)
    assert ours.dtype == theirs.dtype == torch.bool
    assert torch.equal(ours, theirs)
    assert 0 < int(ours.sum()) < int((grid == FREE).sum())
