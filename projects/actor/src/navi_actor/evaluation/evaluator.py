"""Evaluate a policy on an episode plan: pure inference (``torch.inference_mode``), never a gradient step.

Every planned episode (scene, start pose; :mod:`navi_actor.evaluation.plan`) is flown to its own
end (termination or truncation) and counted exactly once, whatever the lengths of the others: the
drones of the batch take the next planned episode as they finish, and drones left without one fly
on unrecorded until the last planned episode ends. Two policies evaluated on the same plan are thus
compared on identical starts, episode by episode.

Per episode: return, steps, collisions, path length (metres flown, from the environment's speed
over each step, the final step included), coverage in visit cells and as a share of the scene's
reachable cells, the steps it took to reach half of the episode's final coverage, and two turning
diagnostics: the mean |yaw action| and the yaw bias (|mean yaw action|), which is near the former for
a drone that flies in circles (a constant turn) and near 0 for one that turns both ways.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from navi_actor.evaluation import stats
from navi_actor.evaluation.plan import EpisodePlan, PlannedEnv, hold_plan_scenes, make_plan
from navi_actor.models import physics_action


class ActResult(Protocol):
    """The part of an acting step the evaluator uses."""

    @property
    def action(self) -> torch.Tensor:
        """[B, 4] raw action (mapped by ``physics_action`` before the environment)."""
        ...

    @property
    def state(self) -> torch.Tensor:
        """[B, S] recurrent state after the step."""
        ...


class ActingPolicy(Protocol):
    """Anything that acts like :class:`~navi_actor.models.NaviPolicy` (also the baselines).

    A policy with a true ``uses_pose`` attribute also receives ``pose=(position [B,3], yaw [B])``:
    the frontier planner maps what it senses from where it is (its own odometry, no scene map).
    A policy with ``new_memory`` / ``new_visit_memory`` methods (:class:`~navi_actor.models.NaviPolicy`)
    gets its episodic memory (``memory=``) and its visit features (``visit_features=``, from the
    drones' poses), one memory of each for the whole plan, cleared at every episode start.
    A policy with an ``action_squash`` attribute (:class:`~navi_actor.models.NaviPolicy`) has its raw
    actions mapped by that mode (``tanh``: the mean action flown is ``tanh(mean)``); the others are
    clipped.
    """

    def initial_state(self, batch_size: int, device: torch.device | str | None = None) -> torch.Tensor:
        """Zero state [B, S]."""
        ...

    def act(
        self, obs: torch.Tensor, state: torch.Tensor, episode_start: torch.Tensor, deterministic: bool = False
    ) -> ActResult:
        """One acting step."""
        ...


EPISODE_COLUMNS = (
    "return", "length", "collisions", "path_m", "seconds", "coverage_cells", "coverage_share",
    "steps_to_half_coverage", "mean_abs_yaw", "yaw_bias",
)  # fmt: skip

# aggregate name -> statistic over the episode columns (means per episode; rates as ratios of sums)
AGGREGATES: dict[str, stats.Statistic] = {
    "coverage_cells": stats.mean_of("coverage_cells"),
    "coverage_share": stats.mean_of("coverage_share"),
    "collisions_per_step": stats.ratio_of_sums("collisions", "length"),
    "collisions_per_100m": stats.ratio_of_sums("collisions", "path_m", 100.0),
    "path_m": stats.mean_of("path_m"),
    "mean_speed_mps": stats.ratio_of_sums("path_m", "seconds"),
    "return": stats.mean_of("return"),
    "length": stats.mean_of("length"),
    "steps_to_half_coverage": stats.mean_of("steps_to_half_coverage"),
    "mean_abs_yaw": stats.mean_of("mean_abs_yaw"),
    "yaw_bias": stats.mean_of("yaw_bias"),
}


@dataclass(frozen=True)
class EvaluationReport:
    """Per-episode results of one policy on one plan (columns in plan order).

    Attributes:
        plan: the plan flown. episodes: its columns ``EPISODE_COLUMNS``, each [N] float64.
        deterministic: acted with the Gaussian mean. seed: sampling seed.
        paths: with ``record_paths``, each planned episode's positions where it acted, in plan order.
    """

    plan: EpisodePlan
    columns: dict[str, np.ndarray]
    deterministic: bool
    seed: int
    paths: tuple[np.ndarray, ...] | None = None  #: per planned episode, [steps, 3] positions (asked for)

    @property
    def episodes(self) -> int:
        """N, planned (and flown) episodes."""
        return self.plan.size

    @property
    def mean_return(self) -> float:
        """Mean episode return."""
        return float(self.columns["return"].mean())

    @property
    def std_return(self) -> float:
        """Standard deviation of episode returns."""
        return float(self.columns["return"].std(ddof=1)) if self.episodes > 1 else 0.0

    @property
    def mean_length(self) -> float:
        """Mean steps per episode."""
        return float(self.columns["length"].mean())

    @property
    def collision_rate(self) -> float:
        """Collisions per step over all episodes."""
        return float(self.columns["collisions"].sum() / max(self.columns["length"].sum(), 1.0))

    @property
    def coverage(self) -> float:
        """Mean visit cells per episode."""
        return float(self.columns["coverage_cells"].mean())

    @property
    def path_length(self) -> float:
        """Mean metres flown per episode."""
        return float(self.columns["path_m"].mean())

    def summary(self) -> dict[str, Any]:
        """Every aggregate with its 95% interval (stratified by scene), as a JSON-able dict."""
        strata = self.plan.scenes.numpy()
        return {
            "episodes": self.episodes,
            "scenes": len(np.unique(strata)),
            "mode": "mean" if self.deterministic else "sample",
            "seed": self.seed,
            **{name: stats.interval(s, self.columns, strata).as_dict() for name, s in AGGREGATES.items()},
        }


def compare_reports(first: EvaluationReport, second: EvaluationReport) -> dict[str, Any]:
    """Paired comparison of two reports on the same plan: ``second - first`` and ``second / first``.

    Raises:
        ValueError: the reports were flown on different plans.
    """
    if not first.plan.same_starts(second.plan):
        raise ValueError("paired comparison needs both policies flown on the same episode plan")
    strata = first.plan.scenes.numpy()
    out: dict[str, Any] = {}
    for name, statistic in AGGREGATES.items():
        out[name] = {
            "difference": stats.paired(
                statistic, first.columns, second.columns, strata, stats.difference
            ).as_dict(),
            "ratio": stats.paired(statistic, first.columns, second.columns, strata, stats.ratio).as_dict(),
        }
    return out


class _Episodes:
    """Running per-drone sums of the planned episodes in flight, and the finished rows."""

    def __init__(
        self, plan: EpisodePlan, env: PlannedEnv, device: torch.device, record_paths: bool = False
    ) -> None:
        B = env.num_actors
        # return, length, collisions, path, yaw, |yaw|
        self.running = torch.zeros(6, B, dtype=torch.float64, device=device)
        self.trace = torch.zeros(B, 64, dtype=torch.float64, device=device)  # coverage after each step
        # positions where each drone acted, [B, steps, 3]; copied to the host once per finished episode
        self.positions = torch.zeros(B, 64, 3, dtype=torch.float32, device=device) if record_paths else None
        self.paths: list[np.ndarray] = [np.zeros((0, 3), np.float32)] * plan.size
        self.assigned = torch.full((B,), -1, dtype=torch.int64, device=device)
        self.columns = {name: np.full(plan.size, np.nan) for name in EPISODE_COLUMNS}
        self.reachable = {int(s): env.reachable_cells(int(s)) for s in plan.scenes.unique().tolist()}
        self.next = 0

    def add(self, reward: torch.Tensor, collision: torch.Tensor, path: torch.Tensor, coverage: torch.Tensor,
            yaw: torch.Tensor, *, position: torch.Tensor | None = None) -> None:  # fmt: skip
        """One step of every drone; ``position`` [B,3] is where it acted (kept when paths are recorded)."""
        ones = torch.ones_like(reward)
        self.running += torch.stack([reward, ones, collision, path, yaw, yaw.abs()]).double()
        length = self.running[1].long()
        if int(length.max()) > self.trace.shape[1]:
            self.trace = torch.cat([self.trace, torch.zeros_like(self.trace)], dim=1)
            if self.positions is not None:
                self.positions = torch.cat([self.positions, torch.zeros_like(self.positions)], dim=1)
        rows = torch.arange(self.trace.shape[0], device=self.trace.device)
        self.trace[rows, (length - 1).clamp(min=0)] = coverage.double()
        if self.positions is not None and position is not None:
            self.positions[rows, (length - 1).clamp(min=0)] = position.float()

    def finish(self, rows: torch.Tensor, plan: EpisodePlan, dt: float) -> None:
        """Record the episodes of drones ``rows`` (long [K], all assigned) and clear their sums."""
        ids = self.assigned[rows].cpu().numpy()
        ret, length, collisions, path, yaw, abs_yaw = self.running[:, rows].cpu().numpy()
        final = self.trace[rows, (self.running[1, rows].long() - 1).clamp(min=0)]
        reached = self.trace[rows] >= 0.5 * final[:, None]
        steps_to_half = reached.double().argmax(dim=1).cpu().numpy() + 1.0
        final_np = final.cpu().numpy()
        reach = np.array([self.reachable[int(plan.scenes[i])] or np.nan for i in ids], dtype=np.float64)
        for name, values in (
            ("return", ret), ("length", length), ("collisions", collisions), ("path_m", path),
            ("seconds", length * dt), ("coverage_cells", final_np), ("coverage_share", final_np / reach),
            ("steps_to_half_coverage", steps_to_half), ("mean_abs_yaw", abs_yaw / length),
            ("yaw_bias", np.abs(yaw) / length),
        ):  # fmt: skip
            self.columns[name][ids] = values
        if self.positions is not None:
            kept = self.positions[rows].cpu().numpy()  # indexed rows: a copy, not a view of the buffer
            for k, (episode, steps) in enumerate(zip(ids.tolist(), length.astype(int).tolist(), strict=True)):
                self.paths[episode] = kept[k, :steps]

    def clear(self, done: torch.Tensor) -> None:
        """Zero the sums of drones whose episode (planned or not) ended this step."""
        self.running[:, done] = 0.0
        self.trace[done] = 0.0

    def assign(self, env: PlannedEnv, rows: torch.Tensor, plan: EpisodePlan) -> torch.Tensor | None:
        """Give drones ``rows`` the next planned episodes (the rest go idle); returns obs if any started."""
        take = min(int(rows.numel()), plan.size - self.next)
        self.assigned[rows[take:]] = -1
        if take == 0:
            return None
        ids = torch.arange(self.next, self.next + take)
        self.next += take
        self.assigned[rows[:take]] = ids.to(self.assigned.device)
        return env.start_episodes(rows[:take], plan.scenes[ids], plan.positions[ids], plan.yaws[ids])


class ActingInputs:
    """What a policy reads besides its observation and state: the pose (``uses_pose``), its episodic
    memory (``new_memory``) and its visit features (``new_visit_memory``), one memory of each for
    the whole plan (each clears a drone's row at its episode start)."""

    def __init__(self, policy: ActingPolicy, env: PlannedEnv, device: torch.device) -> None:
        B = env.num_actors
        self.env, self.device = env, device
        self.uses_pose = bool(getattr(policy, "uses_pose", False))
        new_memory = getattr(policy, "new_memory", None)
        self.memory = new_memory(B, device) if new_memory is not None else None
        new_visits = getattr(policy, "new_visit_memory", None)
        self.visits = new_visits(B, device) if new_visits is not None else None

    def __call__(self, episode_start: torch.Tensor, obs: torch.Tensor) -> dict[str, Any]:
        """Keyword arguments of this step's ``act`` for ``obs`` (the visit memory remembers the poses)."""
        extra: dict[str, Any] = {"pose": self.env.poses()} if self.uses_pose else {}
        if self.memory is not None:
            extra["memory"] = self.memory
        if self.visits is not None:
            position, yaw = self.env.poses()
            extra["visit_features"] = self.visits.observe(
                position.to(self.device), yaw.to(self.device), episode_start, obs
            )
        return extra


@torch.inference_mode()
def evaluate_policy(
    policy: ActingPolicy,
    env: PlannedEnv,
    episodes_per_scene: int = 8,
    *,
    plan: EpisodePlan | None = None,
    deterministic: bool = False,
    seed: int = 0,
    max_env_steps: int = 10_000_000,
    record_paths: bool = False,
) -> EvaluationReport:
    """Fly every episode of ``plan`` (default: ``episodes_per_scene`` starts per scene) with ``policy``.

    Args:
        policy: the policy (recurrent state carried step to step, reset at each episode start).
        env: a planned batched environment.
        episodes_per_scene: K, when no ``plan`` is given (the plan is drawn with ``seed``).
        plan: the episode plan to fly (pass the same plan to every policy you compare).
        deterministic: act with the Gaussian mean instead of sampling.
        seed: environment reset seed and torch seed for sampled actions.
        max_env_steps: safety cap on drone-steps; exceeding it raises.
        record_paths: keep every planned episode's positions (``report.paths``; the environment
            needs ``poses()``), for pictures of where the policy flew.

    Returns:
        :class:`EvaluationReport` with one row per planned episode.

    Raises:
        RuntimeError: the plan did not finish within ``max_env_steps``.
    """
    plan = plan if plan is not None else make_plan(env, episodes_per_scene, seed)
    hold_plan_scenes(env, int(plan.scenes.unique().numel()))
    was_training = isinstance(policy, nn.Module) and policy.training
    if isinstance(policy, nn.Module):
        policy.eval()
    torch.manual_seed(seed)
    device, B = env.device, env.num_actors
    env.reset(seed)
    episodes = _Episodes(plan, env, device, record_paths)
    obs = episodes.assign(env, torch.arange(B, device=device), plan)
    assert obs is not None
    obs = obs.to(device).clone()
    state = policy.initial_state(B, device)
    episode_start = torch.ones(B, dtype=torch.bool, device=device)
    inputs = ActingInputs(policy, env, device)
    zeros = torch.zeros(B, device=device)
    squash = str(getattr(policy, "action_squash", "clip"))
    steps = 0
    while bool((episodes.assigned >= 0).any()):
        if steps >= max_env_steps:
            raise RuntimeError(
                f"the plan of {plan.size} episodes did not finish in {max_env_steps} drone-steps"
            )
        position = env.poses()[0].to(device) if record_paths else None  # type: ignore[attr-defined]
        extra = inputs(episode_start, obs)
        acted = policy.act(obs, state, episode_start, deterministic=deterministic, **extra)
        action = physics_action(acted.action, squash)
        step = env.step(action)
        done = (step.terminated | step.truncated).to(device)
        info = step.info
        path = info.get("speed", zeros).to(device).float() * env.dt
        collision = info.get("collision", zeros).to(device).float()
        coverage = info.get("coverage", zeros).to(device).float()
        yaw = action[:, 3].to(device).float()
        episodes.add(step.reward.to(device), collision, path, coverage, yaw, position=position)
        ended = (done & (episodes.assigned >= 0)).nonzero().squeeze(1)
        obs = step.obs
        if ended.numel():
            episodes.finish(ended, plan, env.dt)
            started = episodes.assign(env, ended, plan)
            obs = started if started is not None else obs
        episodes.clear(done)
        obs, state, episode_start = obs.to(device).clone(), acted.state, done
        steps += B
    if isinstance(policy, nn.Module):
        policy.train(was_training)
    paths = tuple(episodes.paths) if record_paths else None
    return EvaluationReport(plan, episodes.columns, deterministic, seed, paths)
