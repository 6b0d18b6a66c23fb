"""Pick the checkpoint of a run whose mean action explores best on the scenes it trained on.

Why: PPO's last checkpoint is not its best deployed policy. In the learning runs of November 2026
the mean action's held-out coverage rose and fell by up to 0.5x random between the checkpoints of one
run (docs/experiments/2026-11-checkpoint-selection.md), and the training curve, which measures the
*sampled* policy, does not show it. The rule mirrors the learning targets: fly every checkpoint and
the random policy with the Gaussian mean on one episode plan over the run's training scenes (never a
held-out scene), keep the checkpoints whose collision rate is at most ``max_collision_ratio`` times
random's, and take the one among them with the most coverage; when none is that careful, take the one
that collides least.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from navi_actor.evaluation.plan import EpisodePlan, PlannedEnv, make_plan

if TYPE_CHECKING:
    from navi_actor.evaluation.evaluator import EvaluationReport

#: the learning issue's collision target: the deployed policy collides at most 0.3x as often as random
DEFAULT_MAX_COLLISION_RATIO = 0.3


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
class Selection:
    """The candidates in the order given, the chosen one, and the plan and reference they were judged on."""

    candidates: tuple[Candidate, ...]
    chosen: Candidate
    random_coverage: float
    random_collision_rate: float
    scenes: tuple[str, ...]
    episodes_per_scene: int
    seed: int
    max_collision_ratio: float
    rule: str

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (``selection.json``)."""
        out = asdict(self)
        out["candidates"] = [asdict(c) for c in self.candidates]
        out["chosen"] = asdict(self.chosen)
        out["scenes"] = list(self.scenes)
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
        return max(careful, key=lambda c: (c.coverage, c.step_id)), "most coverage among the careful"
    return min(candidates, key=lambda c: (c.collision_rate, -c.coverage)), "none careful: fewest collisions"


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
) -> Selection:  # fmt: skip
    """Fly the random policy and every checkpoint of ``paths`` (mean action) on one plan of ``scenes``
    (default: all of ``env``'s), ``episodes_per_scene`` starts each drawn with ``seed``, and choose.

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
    candidates = []
    for path in paths:
        limit = max_collision_ratio
        candidate = judge_checkpoint(path, env, plan, random, max_collision_ratio=limit, device=device)
        candidates.append(candidate)
        if note is not None:
            note(f"{Path(path).name}: {describe(candidate)}")
    chosen, rule = choose(candidates)
    corpus = getattr(getattr(env, "scenes", None), "corpus", None)
    names = sorted({scene_name(corpus[i]) for i in plan.scenes.tolist()}) if corpus is not None else []
    return Selection(
        tuple(candidates), chosen, round(random.coverage, 3), round(random.collision_rate, 5), tuple(names),
        episodes_per_scene, seed, max_collision_ratio, rule,
    )  # fmt: skip


def judge_checkpoint(
    path: Path, env: PlannedEnv, plan: EpisodePlan, random: EvaluationReport, *, max_collision_ratio: float,
    device: str | torch.device = "cpu",
) -> Candidate:  # fmt: skip
    """Fly one checkpoint with its mean action on ``plan`` and judge it against ``random``'s report of the
    same plan (the random policy flies once for all candidates)."""
    from navi_actor.checkpoints import load_policy
    from navi_actor.evaluation.evaluator import evaluate_policy

    policy, loaded = load_policy(path, device)
    report = evaluate_policy(policy, env, plan=plan, deterministic=True, seed=random.seed)
    return Candidate(
        str(path), int(loaded.step_id), round(report.coverage, 3), round(report.collision_rate, 5),
        _ratio(report.coverage, random.coverage), _ratio(report.collision_rate, random.collision_rate),
        report.collision_rate <= max_collision_ratio * random.collision_rate,
    )  # fmt: skip


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
