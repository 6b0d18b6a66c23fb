"""Pick the checkpoint of a run whose mean action explores best on the scenes it trained on.

Why: PPO's last checkpoint is not its best deployed policy. In the learning runs of November 2026
the mean action's held-out coverage rose and fell by up to 0.5x random between the checkpoints of one
run (docs/experiments/2026-11-checkpoint-selection.md), and the training curve, which measures the
*sampled* policy, does not show it. The rule mirrors the learning targets: fly every checkpoint and
the random policy with the Gaussian mean on one episode plan over the run's training scenes (never a
held-out scene), keep the checkpoints whose collision rate is at most ``max_collision_ratio`` times
random's, and take the one among them with the most coverage; when none is that careful, take the one
that collides least.

Unless ``confirm_episodes_per_scene`` is 0, the near-equals are flown again: the careful checkpoints
whose coverage is not clearly below the winner's (the paired 95 % interval of the difference reaches
0) fly a second plan of other starts on the same scenes, and the rule is applied to that plan's figures
alone. Why: a field of 17 checkpoints held two a draw apart on 60 episodes and 0.23x random apart held
out (docs/experiments/2026-11-checkpoint-selection.md); the second plan's figures do not carry the
luck that made the winner win the first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from navi_actor.evaluation import stats
from navi_actor.evaluation.plan import EpisodePlan, PlannedEnv, make_plan

if TYPE_CHECKING:
    from navi_actor.evaluation.evaluator import EvaluationReport

#: the learning issue's collision target: the deployed policy collides at most 0.3x as often as random
DEFAULT_MAX_COLLISION_RATIO = 0.3
#: :func:`choose`'s rule when some candidate is careful
CAREFUL_RULE = "most coverage among the careful"
# Second-plan starts per scene for the near-equals (0: off). 8, twice the first plan, chose the better
# of seed 2's near-equals held out; seeds 0 and 3 had none, so it cost them nothing
# (docs/experiments/2026-11-checkpoint-selection.md).
DEFAULT_CONFIRM_EPISODES_PER_SCENE = 8


@dataclass(frozen=True)
class Candidate:
    """One checkpoint flown with its mean action on the selection plan.

    Attributes:
        path: the checkpoint file. step_id: environment steps it had trained for.
        coverage: mean visit cells per episode. collision_rate: collisions per step.
        coverage_ratio, collision_ratio: the same against the random policy on the same plan (None
            where random's is 0).
        careful: collides at most ``max_collision_ratio`` times as often as random.
    """

    path: str
    step_id: int
    coverage: float
    collision_rate: float
    coverage_ratio: float | None
    collision_ratio: float | None
    careful: bool


@dataclass(frozen=True)
class Confirmation:
    """The near-equals flown again on a second plan of the same scenes, and random's figures there.

    Attributes:
        candidates: the near-equals' figures on the second plan (the rule reads these alone).
        random_coverage, random_collision_rate: random's on the second plan.
        episodes_per_scene, seed: the second plan's starts per scene and seed.
    """

    candidates: tuple[Candidate, ...]
    random_coverage: float
    random_collision_rate: float
    episodes_per_scene: int
    seed: int


@dataclass(frozen=True)
class Selection:
    """The candidates in the order given, the chosen one, and the plan and reference they were judged on
    (``confirmation``: the near-equals' second flight, when one was asked for and there were two or more)."""

    candidates: tuple[Candidate, ...]
    chosen: Candidate
    random_coverage: float
    random_collision_rate: float
    scenes: tuple[str, ...]
    episodes_per_scene: int
    seed: int
    max_collision_ratio: float
    rule: str
    confirmation: Confirmation | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (``selection.json``)."""
        out = asdict(self)
        out["candidates"] = [asdict(c) for c in self.candidates]
        out["chosen"] = asdict(self.chosen)
        out["scenes"] = list(self.scenes)
        if self.confirmation is not None:
            out["confirmation"]["candidates"] = [asdict(c) for c in self.confirmation.candidates]
        return out


def choose(candidates: Sequence[Candidate]) -> tuple[Candidate, str]:
    """``(chosen, rule)``: the most coverage among the careful candidates (ties: the later step), else the
    fewest collisions per step (ties: the most coverage).

    Raises:
        ValueError: no candidates.
    """
    if not candidates:
        raise ValueError("no checkpoints to choose from")
    careful = [c for c in candidates if c.careful]
    if careful:
        return max(careful, key=lambda c: (c.coverage, c.step_id)), CAREFUL_RULE
    return min(candidates, key=lambda c: (c.collision_rate, -c.coverage)), "none careful: fewest collisions"


def near_equals(
    coverages: Sequence[np.ndarray], careful: Sequence[bool], best: int, strata: np.ndarray
) -> list[int]:
    """Indices of the careful candidates whose coverage is not clearly below candidate ``best``'s: the
    paired, scene-stratified 95 % interval of ``best - candidate`` (mean coverage per episode) reaches 0.
    ``best`` itself is always one.

    Args:
        coverages: each candidate's per-episode coverage on one plan, [N] in plan order.
        careful: whether each candidate passes the collision limit. best: the chosen candidate.
        strata: [N] scene of each planned episode.
    """
    statistic = stats.mean_of("coverage")
    near = []
    for index, coverage in enumerate(coverages):
        if index == best:
            near.append(index)
        elif careful[index]:
            first, second = {"coverage": coverage}, {"coverage": coverages[best]}
            if stats.paired(statistic, first, second, strata, stats.difference).low <= 0.0:
                near.append(index)
    return near


def scene_name(entry: Any) -> str:
    """A corpus entry's file name (``maze_000.gmdag``), whether it is a path or an in-memory scene."""
    return Path(entry).name if isinstance(entry, (str, Path)) else Path(str(entry.name)).name


def trained_scene_indices(env: Any, trained_on: Sequence[str] | None) -> list[int]:
    """Indices of the environment's scenes the run trained on (all of them when the run's checkpoint
    does not list its scenes, or the environment has no named scenes).

    Raises:
        ValueError: the run lists its scenes and the environment has none of them.
    """
    scenes = getattr(env, "scenes", None)
    corpus = getattr(scenes, "corpus", None)
    if not trained_on or corpus is None:
        return list(range(env.num_scenes))
    known = set(trained_on)
    indices = [i for i, entry in enumerate(corpus) if scene_name(entry) in known]
    if not indices:
        raise ValueError(
            f"none of the {len(corpus)} scenes given is one the run trained on "
            f"({', '.join(sorted(known)[:4])}{', ...' if len(known) > 4 else ''}): pass its --corpus"
        )
    return indices


def select_checkpoint(
    paths: Sequence[Path], env: PlannedEnv, *, episodes_per_scene: int = 4, seed: int = 0,
    max_collision_ratio: float = DEFAULT_MAX_COLLISION_RATIO, device: str | torch.device = "cpu",
    scenes: Sequence[int] | None = None, note: Callable[[str], None] | None = None,
    confirm_episodes_per_scene: int = DEFAULT_CONFIRM_EPISODES_PER_SCENE,
) -> Selection:  # fmt: skip
    """Fly the random policy and every checkpoint of ``paths`` (mean action) on one plan of ``scenes``
    (default: all of ``env``'s), ``episodes_per_scene`` starts each drawn with ``seed``, and choose.

    With ``confirm_episodes_per_scene`` > 0 and two or more careful near-equals (:func:`near_equals`),
    those and random fly a second plan (that many starts per scene, seed ``seed + 1``) and the rule
    chooses among them on its figures alone.

    ``note(line)`` hears one line per checkpoint flown (progress on a long selection).

    Raises:
        navi_actor.checkpoints.CheckpointError: a checkpoint cannot be read.
        ValueError: no paths.
    """
    from navi_actor.evaluation.baselines import RandomPolicy
    from navi_actor.evaluation.evaluator import evaluate_policy

    if not paths:
        raise ValueError("no checkpoints to choose from")
    plan = make_plan(env, episodes_per_scene, seed, scenes)
    random = evaluate_policy(RandomPolicy(), env, plan=plan, deterministic=True, seed=seed)
    flown, limit = [], max_collision_ratio
    for path in paths:
        flown.append(judge_checkpoint(path, env, plan, random, max_collision_ratio=limit, device=device))
        if note is not None:
            note(f"{Path(path).name}: {describe(flown[-1][0])}")
    candidates = [candidate for candidate, _ in flown]
    chosen, rule = choose(candidates)
    confirmation = None
    if confirm_episodes_per_scene > 0 and rule == CAREFUL_RULE:
        near = near_equals(
            [report.columns["coverage_cells"] for _, report in flown], [c.careful for c in candidates],
            candidates.index(chosen), plan.scenes.numpy(),
        )  # fmt: skip
        if len(near) > 1:
            second = make_plan(env, confirm_episodes_per_scene, seed + 1, scenes)
            confirmation = confirm(
                [paths[i] for i in near], env, second, confirm_episodes_per_scene, max_collision_ratio=limit,
                device=device, note=note,
            )  # fmt: skip
            confirmed, rule = choose(confirmation.candidates)
            chosen = candidates[near[confirmation.candidates.index(confirmed)]]
            rule = f"{rule}, confirmed on a second plan among {len(near)} near-equals"
    corpus = getattr(getattr(env, "scenes", None), "corpus", None)
    names = sorted({scene_name(corpus[i]) for i in plan.scenes.tolist()}) if corpus is not None else []
    return Selection(
        tuple(candidates), chosen, round(random.coverage, 3), round(random.collision_rate, 5), tuple(names),
        episodes_per_scene, seed, max_collision_ratio, rule, confirmation,
    )  # fmt: skip


def confirm(
    paths: Sequence[Path], env: PlannedEnv, plan: EpisodePlan, episodes_per_scene: int, *,
    max_collision_ratio: float, device: str | torch.device = "cpu", note: Callable[[str], None] | None = None,
) -> Confirmation:  # fmt: skip
    """Fly random and the checkpoints of ``paths`` (mean action) on ``plan`` (``episodes_per_scene`` starts
    per scene) and judge them there."""
    from navi_actor.evaluation.baselines import RandomPolicy
    from navi_actor.evaluation.evaluator import evaluate_policy

    random = evaluate_policy(RandomPolicy(), env, plan=plan, deterministic=True, seed=plan.seed)
    candidates, limit = [], max_collision_ratio
    for path in paths:
        judged, _ = judge_checkpoint(path, env, plan, random, max_collision_ratio=limit, device=device)
        candidates.append(judged)
        if note is not None:
            note(f"{Path(path).name} on the second plan: {describe(candidates[-1])}")
    return Confirmation(
        tuple(candidates), round(random.coverage, 3), round(random.collision_rate, 5), episodes_per_scene,
        plan.seed,
    )  # fmt: skip


def judge_checkpoint(
    path: Path, env: PlannedEnv, plan: EpisodePlan, random: EvaluationReport, *, max_collision_ratio: float,
    device: str | torch.device = "cpu",
) -> tuple[Candidate, EvaluationReport]:  # fmt: skip
    """Fly one checkpoint with its mean action on ``plan`` and judge it against ``random``'s report of the
    same plan (the random policy flies once for all candidates); its report comes back beside it."""
    from navi_actor.checkpoints import load_policy
    from navi_actor.evaluation.evaluator import evaluate_policy

    policy, loaded = load_policy(path, device)
    report = evaluate_policy(policy, env, plan=plan, deterministic=True, seed=random.seed)
    candidate = Candidate(
        str(path), int(loaded.step_id), round(report.coverage, 3), round(report.collision_rate, 5),
        _ratio(report.coverage, random.coverage), _ratio(report.collision_rate, random.collision_rate),
        report.collision_rate <= max_collision_ratio * random.collision_rate,
    )  # fmt: skip
    return candidate, report


def _ratio(value: float, reference: float) -> float | None:
    return round(value / reference, 4) if reference > 0 else None


def describe(candidate: Candidate) -> str:
    """``coverage 2.29x random, collisions 0.07x random`` (raw figures where random's are 0)."""
    coverage = (
        f"{candidate.coverage_ratio:.2f}x random" if candidate.coverage_ratio is not None
        else f"{candidate.coverage:.1f} cells"
    )  # fmt: skip
    collisions = (
        f"{candidate.collision_ratio:.2f}x random" if candidate.collision_ratio is not None
        else f"{100 * candidate.collision_rate:.1f} % of steps"
    )  # fmt: skip
    return f"coverage {coverage}, collisions {collisions}"


def run_checkpoints(run: Path) -> list[Path]:
    """The step checkpoints of a run folder (``<run>/checkpoints/step_*.pt``, or ``run`` itself when it
    is the checkpoints folder), oldest first.

    Raises:
        ValueError: the folder has none.
    """
    folder = run / "checkpoints" if (run / "checkpoints").is_dir() else run
    found = sorted(folder.glob("step_*.pt"))
    if not found:
        raise ValueError(f"{run} holds no step_*.pt checkpoints (give a run folder of artifacts/runs)")
    return found
