"""The tunable knobs of the frontier planner (keyword arguments of ``FrontierPlanner``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FrontierTunables:
    """Tunable knobs of the planner (keyword arguments of :class:`FrontierPlanner`).

    Attributes:
        map_size_m: edge of each drone's square map, centred on where its episode started.
        slab_half_m: half height of the mapped flight slab around the start height.
        max_range_m: free space is marked no farther than this from the drone. Short on purpose:
            coverage counts cells *visited*, and a frontier that stays near the drone's path makes it
            fly through the space instead of mapping it from afar (on 4 corpus scenes, 3 m covered
            20 % more than 12 m; 2 m more still but with collisions).
        inflate_m: a cell is safe when its centre is this far from every occupied cell centre.
        prefer_clearance_m, clearance_weight: paths pay up to ``1 + weight`` per cell closer than
            ``prefer_clearance_m`` to an obstacle (they keep to the middle of doors and corridors).
        gain_radius_m, gain_weight: frontier score = path cost (m) - weight * unknown cells within
            the radius (prefers frontiers that reveal more).
        replan_steps: replan at least this often (also when the path is blocked or the goal reached).
        reach_m: the goal counts as reached within this distance; a frontier still there is given up.
        give_up_m: radius of the disc of frontier cells given up around an unreachable goal.
        stall_steps: after this many steps without getting 0.25 m closer to the goal, the path cells
            within ``block_m`` ahead are closed (what stops the drone is not on the map: a door
            narrower than the drone, say) and the drone replans.
        lookahead_m: the follower aims at the path point this far ahead.
        cruise_mps: travel speed; slows down near the goal and for sharp turns.
        arrive_gain, arrive_min_mps: near its goal the drone flies at most ``arrive_gain`` (1/s) x the
            distance left, never slower than ``arrive_min_mps``. Frontier goals lie within a few metres
            (``max_range_m``) and are replaced once reached, so an early, deep slow-down made the
            drone brake at every one of them: with 1.5/s from 1.5 m/s it averaged 1.8 m/s of its 4;
            with 4/s from 3 m/s, cruise 5 m/s, ``brake_gain`` 3 and ``prefer_clearance_m`` 1 it
            covers 1.35x as many cells, 3.07x random's on the learning benchmark's held-out plan
            instead of 2.27x (docs/experiments/2026-11-faster-frontier-planner.md).
        brake_gain: the follower's speed guard caps the speed towards a surface at this (1/s) x the
            room left before its stop margin (the real-time server's guard keeps 2).
        teleport_m: a pose jump larger than this (an unannounced respawn) starts a new map.
        min_unknown_m2: unknown regions smaller than this (the inside of a pillar) are not frontiers.
        sweep: once no frontier is left, visit the nearest safe cell whose visit cell
            (``reward.visit_cell_m``, as the environment's coverage counts) the drone has not been in.
        sweep_clearance_m: sweep goals lie at least this far from occupied cell centres (nearer, the
            follower's guard stops the drone short of them).
        layers: once nothing is left at its height, start a new map one visit cell higher or lower
            (where floor and ceiling leave room): coverage counts visit cells in 3D.
        follow_height: the map's slab follows the drone's height at every step instead of the height
            its map started at, so the planner never asks to climb or descend back. For labelling
            another pilot's flight (DAgger): a policy that drifted off the start height was otherwise
            labelled "climb back" on most steps, and mapped nothing from outside the slab
            (docs/experiments/2026-12-dagger-during-ppo.md). Use with ``layers=False``.
        turn_weight_m: a frontier's score also pays this many metres per radian between the drone's
            heading and the bearing to it, so of two frontiers about as near the drone keeps going the
            way it faces instead of turning back (docs/experiments/2026-12-planner-turn-cost.md).
    """

    map_size_m: float = 80.0
    slab_half_m: float = 0.5
    max_range_m: float = 3.0
    inflate_m: float = 0.25
    prefer_clearance_m: float = 1.0
    clearance_weight: float = 2.0
    gain_radius_m: float = 1.0
    gain_weight: float = 0.05
    replan_steps: int = 5
    reach_m: float = 0.75
    give_up_m: float = 1.0
    stall_steps: int = 25
    block_m: float = 1.0
    lookahead_m: float = 1.5
    cruise_mps: float = 5.0
    arrive_gain: float = 4.0
    arrive_min_mps: float = 3.0
    brake_gain: float = 3.0
    teleport_m: float = 2.0
    min_unknown_m2: float = 2.0
    sweep: bool = True
    layers: bool = True
    sweep_clearance_m: float = 0.55
    follow_height: bool = False
    turn_weight_m: float = 0.0
