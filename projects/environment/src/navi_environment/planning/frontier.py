"""A batched classical frontier explorer (Yamauchi 1997) flying on what the drone senses.

Per drone: a 2.5D occupancy map of its flight slab built from the depth rays and its own pose
(:mod:`.occupancy`, all drones at once), a frontier (a safe free cell next to unknown space) chosen
by path cost minus an information-gain bonus, a Dijkstra path to it on the map (:mod:`.grid_search`),
and a pure-pursuit follower that turns the path into the same ``[B, 4]`` actions in [-1, 1] every
policy sends (forward, vertical, lateral, yaw rate). No scene access, no ground truth: the same
inputs a learned policy has plus its own pose.

Why here and not in ``navi_actor``: the auditor's explorer flies it too (``explore --autopilot
frontier``) and may not import the actor. Planning is per-drone Python (a search every few steps);
map updates and the follower are batched tensor ops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np
import torch

from navi_environment.config import EnvironmentSettings
from navi_environment.planning import grid_search
from navi_environment.planning.follow import FollowCommand, PathFollower
from navi_environment.planning.occupancy import OCCUPIED, UNKNOWN, OccupancyGrids
from navi_environment.planning.tunables import FrontierTunables

_PROGRESS_M = 0.25  # getting this much nearer the goal resets the stall count
_STILL_M = 0.02  # a step shorter than this does not move the drone...
_STILL_STEPS = 6  # ...and this many in a row with a goal ahead mean it is pressed against something
_LAYER_MARGIN_M = 0.2  # a new layer's height keeps the drone radius + this from floor and ceiling


@dataclass
class _Plan:
    """One drone's current goal and path (world xy) and how following it goes."""

    path: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    goal: tuple[int, int] | None = None  # map cell (row, column)
    index: int = 0  # path point nearest the drone
    age: int = 0  # steps since planned
    best_remaining: float = math.inf  # nearest the drone has been to the goal, metres
    stalled: int = 0  # steps without getting nearer
    idle: bool = False  # nothing left to explore at the last search
    sweep: bool = False  # the goal is a cell to visit, not a frontier
    passable: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=bool))  # searched cells
    corner: np.ndarray = field(default_factory=lambda: np.zeros(2))  # world xy of passable's (0, 0) corner
    last_xy: np.ndarray | None = None  # drone position at the previous step
    still: int = 0  # consecutive steps the drone has hardly moved


class FrontierPlanner:
    """Batched frontier explorer; see the module docstring.

    Args:
        settings: environment settings (sensor shape and horizon, physics speeds and radius).
        num_drones: B.
        cell_m: map cell edge, metres. 0.25 by default: the corpus's 1 m doors (0.84 m between the
            frame posts) can vanish on a 0.5 m grid, where both cells of the opening hold a post.
        device: where the maps live (observations and poses are moved there).
        **tunables: fields of :class:`FrontierTunables`.
    """

    def __init__(
        self,
        settings: EnvironmentSettings,
        num_drones: int,
        *,
        cell_m: float = 0.25,
        device: str | torch.device = "cpu",
        **tunables: float,
    ) -> None:
        known = {f.name for f in fields(FrontierTunables)}
        unknown = sorted(set(tunables) - known)
        if unknown:
            raise ValueError(f"unknown frontier planner settings {unknown}; known: {sorted(known)}")
        self.tunables = FrontierTunables(**tunables)  # type: ignore[arg-type]
        self.settings = settings
        self.num_drones = num_drones
        self.device = torch.device(device)
        self.cell_m = float(cell_m)
        sensor, t = settings.sensor, self.tunables
        self.maps = OccupancyGrids(
            num_drones, sensor.azimuth_bins, sensor.elevation_bins, sensor.horizon_m, cell_m=cell_m,
            size_m=t.map_size_m, slab_half_m=t.slab_half_m, max_range_m=t.max_range_m, device=self.device,
        )  # fmt: skip
        size = self.maps.size
        self.given_up = np.zeros((num_drones, size, size), dtype=bool)
        self.blocked = np.zeros((num_drones, size, size), dtype=bool)  # cells a drone stalled in
        self.layers: list[list[int]] = [[] for _ in range(num_drones)]  # visit-cell layers flown
        self.visited = torch.zeros(num_drones, size, size, dtype=torch.bool, device=self.device)
        self.visit_cell_m = settings.reward.visit_cell_m
        span = math.ceil(self.visit_cell_m / self.cell_m)
        offsets = torch.arange(-span, span + 1, device=self.device)
        self._visit_window = torch.cartesian_prod(offsets, offsets)  # [K, 2] (d column, d row)
        self.plans = [_Plan() for _ in range(num_drones)]
        self.follower = PathFollower(settings, t, self.device)
        self.fresh = torch.ones(num_drones, dtype=torch.bool, device=self.device)
        self.last_position = torch.zeros(num_drones, 3, device=self.device)
        reach = math.ceil(t.inflate_m / self.cell_m)
        dr, dc = np.mgrid[-reach : reach + 1, -reach : reach + 1]
        inside = np.hypot(dr, dc) * self.cell_m < t.inflate_m
        self._inflate_offsets = np.stack([dr[inside], dc[inside]], axis=1)  # cells too near an obstacle

    def reset(self, rows: torch.Tensor | None = None) -> None:
        """Forget the maps of ``rows`` (bool mask [B] or long indices; None = all drones).

        The maps restart, centred on the pose given with the next :meth:`act`.
        """
        if rows is None:
            self.fresh.fill_(True)
            return
        rows = rows.to(self.device)
        if rows.dtype == torch.bool:
            self.fresh |= rows
        else:
            self.fresh[rows.long()] = True

    @torch.no_grad()
    def act(self, obs: torch.Tensor, position: torch.Tensor, yaw: torch.Tensor) -> torch.Tensor:
        """One step for every drone: update the maps, (re)plan where due, follow the paths.

        Args:
            obs: [B, 3, Az, El] observations. position: [B, 3] metres. yaw: [B] radians.

        Returns:
            [B, 4] actions in [-1, 1] on ``obs``'s device.
        """
        out_device = obs.device
        obs = obs.to(self.device, torch.float32)
        position = position.to(self.device, torch.float32)
        yaw = yaw.to(self.device, torch.float32)
        self._start_new_maps(position)
        if self.tunables.follow_height:
            self.maps.z0.copy_(position[:, 2])
        self.maps.update(obs, position, yaw)
        self._mark_visited(position)
        carrot = position[:, :2].clone()
        goal_distance = torch.zeros(self.num_drones, device=self.device)
        active = torch.zeros(self.num_drones, dtype=torch.bool, device=self.device)
        xy = position[:, :2].cpu().numpy()
        headings = yaw.cpu().numpy()
        for row in range(self.num_drones):
            target = self._carrot(row, xy[row], float(headings[row]))
            if target is not None:
                carrot[row] = torch.from_numpy(target[0]).to(carrot)
                goal_distance[row] = target[1]
                active[row] = True
        if self.tunables.layers:
            active |= self._change_layers(obs, position)
        command = FollowCommand(carrot, goal_distance, active, self.maps.z0)
        return self.follower(command, obs, position, yaw).to(out_device)

    def _start_new_maps(self, position: torch.Tensor) -> None:
        """Reset rows marked fresh or whose pose jumped (a respawn nobody announced)."""
        jumped = (position - self.last_position).norm(dim=1) > self.tunables.teleport_m
        start = self.fresh | jumped
        self.last_position.copy_(position)
        if not bool(start.any()):
            return
        rows = start.nonzero().squeeze(1)
        for row in rows.tolist():
            self._forget(row, position[row])
            self.layers[row] = [math.floor(float(position[row, 2]) / self.visit_cell_m)]
        self.fresh[rows] = False

    def _change_layers(self, obs: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        """Drones with nothing left at their height start a new map in the visit-cell layer above or
        below (where floor and ceiling leave room and it was not flown yet); [B] bool of drones
        changing height (they hover while they climb or descend)."""
        away = (position[:, 2] - self.maps.z0).abs() > 0.5 * self.tunables.slab_half_m
        idle = [row for row in range(self.num_drones) if self.plans[row].idle and not bool(away[row])]
        if not idle:
            return away
        _, below, above = self.follower.surroundings(obs)
        margin, step = self.settings.physics.drone_radius_m + _LAYER_MARGIN_M, self.visit_cell_m
        for row in idle:
            z = float(position[row, 2])
            low, high = z - float(below[row]) + margin, z + float(above[row]) - margin
            here = math.floor(z / step)
            for layer in (here + 1, here - 1, here + 2, here - 2):
                bottom, top = max(layer * step, low), min((layer + 1) * step, high)
                if bottom < top and layer not in self.layers[row]:
                    self.layers[row].append(layer)
                    new_position = position[row].clone()
                    new_position[2] = 0.5 * (bottom + top)
                    self._forget(row, new_position)
                    away[row] = True
                    break
        return away

    def _forget(self, row: int, position: torch.Tensor) -> None:
        """Drone ``row`` starts a new map centred at ``position`` (its slab at that height)."""
        self.maps.reset(torch.tensor([row], device=self.device), position[None])
        self.given_up[row] = False
        self.blocked[row] = False
        self.visited[row] = False
        self.plans[row] = _Plan()

    def _mark_visited(self, position: torch.Tensor) -> None:
        """Map cells whose centre lies in the drone's visit cell (``reward.visit_cell_m``) are visited."""
        cells = self.maps.cell_of(position[:, :2])[:, None, :] + self._visit_window  # [B, K, 2]
        centres = self.maps.origin[:, None, :] + (cells.float() + 0.5) * self.cell_m
        same = (
            torch.floor(centres / self.visit_cell_m) == torch.floor(position[:, None, :2] / self.visit_cell_m)
        ).all(dim=2)
        inside = ((cells >= 0) & (cells < self.maps.size)).all(dim=2)
        keep = same & inside
        b = torch.arange(cells.shape[0], device=self.device)[:, None].expand_as(keep)
        self.visited[b[keep], cells[..., 1][keep], cells[..., 0][keep]] = True

    # --- per-drone planning ------------------------------------------------------------------------

    def _carrot(self, row: int, xy: np.ndarray, yaw: float) -> tuple[np.ndarray, float] | None:
        """(point to fly at, distance to the goal) for drone ``row``, replanning where due; None = idle."""
        plan = self.plans[row]
        plan.age += 1
        moved = float(np.linalg.norm(xy - plan.last_xy)) if plan.last_xy is not None else math.inf
        plan.still = plan.still + 1 if moved < _STILL_M else 0
        plan.last_xy = xy.copy()
        if self._needs_plan(row, plan, xy):
            previous, plan = plan, self._plan(row, xy, yaw)
            plan.last_xy, plan.still = previous.last_xy, previous.still
            if plan.goal is not None and plan.goal == previous.goal:  # same goal: keep the stall watch
                plan.best_remaining, plan.stalled = previous.best_remaining, previous.stalled
            self.plans[row] = plan
        if plan.goal is None or len(plan.path) == 0:
            return None
        return self._pursue(plan, xy)

    def _needs_plan(self, row: int, plan: _Plan, xy: np.ndarray) -> bool:
        """Replan when there is no goal, periodically, at the goal, when stalled or when the path is
        blocked; give the goal up when it was reached yet is not cleared, or when stalled."""
        t = self.tunables
        if plan.goal is None:
            return not plan.idle or plan.age >= t.replan_steps
        remaining = float(np.linalg.norm(plan.path[-1] - xy))
        if remaining < plan.best_remaining - _PROGRESS_M:
            plan.best_remaining, plan.stalled = remaining, 0
        else:
            plan.stalled += 1
        if plan.sweep:
            cleared = bool(self.visited[row, plan.goal[0], plan.goal[1]])
            reached = remaining < 0.5 * self.cell_m
        else:
            cleared = not self._is_frontier(row, plan.goal)
            reached = remaining < t.reach_m
        stuck = plan.still >= _STILL_STEPS and remaining >= t.reach_m  # pressed against something
        if plan.stalled >= t.stall_steps or stuck:  # something the map does not show stops the drone
            self._block_ahead(row, plan, xy)
            plan.still = 0
            return True
        if reached and not cleared:
            self._give_up(row, plan.goal)
            return True
        return cleared or plan.age >= t.replan_steps or self._blocked(row, plan)

    def _is_frontier(self, row: int, cell: tuple[int, int]) -> bool:
        grid = self.maps.grid[row]
        r, c = cell
        near = grid[max(0, r - 1) : r + 2, max(0, c - 1) : c + 2]
        return bool((near == UNKNOWN).any())

    def _blocked(self, row: int, plan: _Plan) -> bool:
        """Some remaining path cell now lies within ``inflate_m`` of an occupied cell."""
        ahead = plan.path[plan.index + 1 :]  # not the drone's own cell: it may hug a wall
        if len(ahead) == 0:
            return False
        cells = np.floor((ahead - self.maps.origin[row].cpu().numpy()) / self.cell_m).astype(np.int64)
        near = (cells[:, None, ::-1] + self._inflate_offsets[None]).reshape(-1, 2)  # (row, column)
        near = np.clip(near, 0, self.maps.size - 1)
        grid = self.maps.numpy_grid(row)
        return bool((grid[near[:, 0], near[:, 1]] == OCCUPIED).any())

    def _block_ahead(self, row: int, plan: _Plan, xy: np.ndarray) -> None:
        """Close the path cells within ``block_m`` ahead of a stalled drone (a door too narrow for it,
        say), so no later path tries them again this episode."""
        ahead = plan.path[plan.index :]
        ahead = ahead[np.linalg.norm(ahead - xy, axis=1) <= self.tunables.block_m]
        cells = np.floor((ahead - self.maps.origin[row].cpu().numpy()) / self.cell_m).astype(np.int64)
        cells = np.clip(cells, 0, self.maps.size - 1)
        self.blocked[row, cells[:, 1], cells[:, 0]] = True

    def _give_up(self, row: int, cell: tuple[int, int]) -> None:
        """Never aim for frontier cells within ``give_up_m`` of ``cell`` again (this episode)."""
        radius = max(1.0, self.tunables.give_up_m / self.cell_m)
        reach, size = math.ceil(radius), self.maps.size
        r0, r1 = max(0, cell[0] - reach), min(size, cell[0] + reach + 1)
        c0, c1 = max(0, cell[1] - reach), min(size, cell[1] + reach + 1)
        rows, cols = np.ogrid[r0:r1, c0:c1]
        self.given_up[row, r0:r1, c0:c1] |= (rows - cell[0]) ** 2 + (cols - cell[1]) ** 2 <= radius**2

    def _plan(self, row: int, xy: np.ndarray, yaw: float) -> _Plan:
        """Search from the drone (heading ``yaw``) over its map; path to the best frontier, else
        (``sweep``) to the nearest safe cell not visited yet, else an idle plan."""
        t, cell_m = self.tunables, self.cell_m
        grid = self.maps.numpy_grid(row)
        rows, cols = grid_search.known_box(grid, margin=1)
        sub = grid[rows, cols]
        origin = self.maps.origin[row].cpu().numpy()
        here = np.floor((xy - origin) / cell_m).astype(np.int64)  # (column, row)
        start = (int(here[1]) - rows.start, int(here[0]) - cols.start)
        if not (0 <= start[0] < sub.shape[0] and 0 <= start[1] < sub.shape[1]):
            return _Plan(idle=True)
        distance = grid_search.obstacle_distance(sub, cell_m)
        blocked = self.blocked[row, rows, cols]
        safe = grid_search.safe_cells(sub, distance, t.inflate_m) & ~blocked
        open_goals = safe & ~self.given_up[row, rows, cols]
        cost = grid_search.step_costs(distance, t.prefer_clearance_m, t.clearance_weight)
        escape = self._escape_cells(sub, start)
        passable = safe | (escape & ~blocked)
        passable[start] = True
        reach, predecessor = grid_search.shortest_paths(passable, cost, start)
        reach_m = np.where(open_goals, reach * cell_m, np.inf)
        sweep = False
        goal = self._best_frontier(row, (rows, cols), sub, reach_m, self._turn_cost(sub.shape, start, yaw))
        if goal is None and t.sweep:
            roomy = distance >= t.sweep_clearance_m  # where the follower's guard lets the drone go
            unvisited = np.where(self.visited[row, rows, cols].cpu().numpy() | ~roomy, np.inf, reach_m)
            goal, sweep = (grid_search.argmin_cell(unvisited), True)
        if goal is None:
            return _Plan(idle=True)
        cells = grid_search.path_to(predecessor, sub.shape[1], goal)
        corner = origin + np.array([cols.start, rows.start]) * cell_m
        path = corner + (cells[:, ::-1] + 0.5) * cell_m
        full_goal = (goal[0] + rows.start, goal[1] + cols.start)
        return _Plan(path=path, goal=full_goal, sweep=sweep, passable=passable, corner=corner)

    def _turn_cost(self, shape: tuple[int, ...], start: tuple[int, int], yaw: float) -> np.ndarray | float:
        """[H, W] metres added to each cell's frontier score: ``turn_weight_m`` per radian between the
        drone's heading ``yaw`` and the bearing from its cell ``start`` (row, column) to that cell."""
        weight = self.tunables.turn_weight_m
        if weight == 0.0:
            return 0.0
        r, c = np.ogrid[: shape[0], : shape[1]]
        bearing = np.arctan2(r - start[0], c - start[1])  # rows grow with y, columns with x
        turn = np.remainder(bearing - yaw + math.pi, 2.0 * math.pi) - math.pi  # in [-pi, pi)
        return weight * np.abs(turn)

    def _best_frontier(
        self, row: int, box: tuple[slice, slice], sub: np.ndarray, reach_m: np.ndarray,
        turn: np.ndarray | float,
    ) -> tuple[int, int] | None:  # fmt: skip
        """The reachable frontier of least path cost minus gain plus ``turn`` (``box`` cell), or None."""
        t = self.tunables
        holes = max(1, round(t.min_unknown_m2 / self.cell_m**2))
        frontier = grid_search.frontier_cells(sub, np.isfinite(reach_m), holes)
        too_near = frontier & (reach_m < t.reach_m)
        for r, c in np.argwhere(too_near):  # a frontier at the drone that did not clear: unobservable
            self._give_up(row, (int(r) + box[0].start, int(c) + box[1].start))
        frontier &= ~too_near
        if not frontier.any():
            return None
        gain = grid_search.unknown_gain(sub, max(1, round(t.gain_radius_m / self.cell_m)))
        return grid_search.argmin_cell(np.where(frontier, reach_m - t.gain_weight * gain + turn, np.inf))

    def _escape_cells(self, sub: np.ndarray, start: tuple[int, int]) -> np.ndarray:
        """Free cells within ``inflate_m`` + one cell of the drone: lets a drone that drifted close to a
        wall plan its way back out (they are safe enough to leave through, not to aim for)."""
        radius = self.tunables.inflate_m / self.cell_m + 1.0
        r, c = np.ogrid[: sub.shape[0], : sub.shape[1]]
        near = (r - start[0]) ** 2 + (c - start[1]) ** 2 <= radius**2
        escape = near & (sub != OCCUPIED)
        escape[start] = True  # (even when blocked: the search starts here)
        return escape

    def _pursue(self, plan: _Plan, xy: np.ndarray) -> tuple[np.ndarray, float]:
        """Advance along the path; the carrot is the farthest path point within ``lookahead_m`` that
        the drone sees in a straight line over passable cells (no cutting past a door post)."""
        path = plan.path
        window = path[plan.index : plan.index + 8]
        plan.index += int(np.argmin(np.linalg.norm(window - xy, axis=1)))
        ahead = path[plan.index : plan.index + 4 * math.ceil(self.tunables.lookahead_m / self.cell_m)]
        near = np.linalg.norm(ahead - xy, axis=1) <= self.tunables.lookahead_m
        near[0] = True
        seen = grid_search.line_of_sight(plan.passable, plan.corner, self.cell_m, xy, ahead) & near
        pick = int(np.flatnonzero(seen)[-1]) if seen.any() else min(1, len(ahead) - 1)
        return ahead[pick], float(np.linalg.norm(path[-1] - xy))
