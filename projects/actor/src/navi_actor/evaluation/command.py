"""What ``navi-actor evaluate`` and ``navi-actor compare`` do, apart from parsing options.

Every named policy (a checkpoint, ``random``, ``heuristic`` or ``frontier``) flies the same episode
plan (K starts per scene drawn once with the seed), in each requested acting mode; the output has
one block per policy and mode, each aggregate with its 95% interval, and ``compare`` adds the paired
differences and ratios (second vs first) episode by episode.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import click

Mode = Literal["mean", "sample", "both"]
BASELINES = ("random", "heuristic", "frontier")

if TYPE_CHECKING:
    from navi_actor.evaluation.selection import Candidate


def resolve_policy(spec: str, env: Any, device: str) -> tuple[Any, bool]:
    """``(policy, learned)`` for a policy spec: a baseline name or a checkpoint path.

    Raises:
        click.ClickException: an unknown name, an unreadable checkpoint, or a sensor mismatch.
    """
    from navi_actor.evaluation import baselines

    if spec == "random":
        return baselines.RandomPolicy(), False
    if spec in ("heuristic", "frontier"):
        settings = getattr(env, "settings", None)
        if settings is None:
            raise click.ClickException(
                f"the {spec} policy flies only in the simulator (--environment-backend sdfdag)"
            )
        if spec == "heuristic":
            return baselines.ReactiveHeuristic(horizon_m=settings.sensor.horizon_m), False
        return baselines.FrontierPolicy(settings, env.num_actors), False
    path = Path(spec)
    if not path.is_file():
        raise click.ClickException(f"policy {spec!r} is neither a checkpoint file nor one of {BASELINES}")
    return _checkpoint_policy(path, env, device), True


def _checkpoint_policy(path: Path, env: Any, device: str) -> Any:
    from navi_actor.checkpoints import CheckpointError, load_policy

    try:
        policy, loaded = load_policy(path, device)
    except CheckpointError as error:
        raise click.ClickException(str(error)) from error
    check_sensor(path, loaded.policy_config, env)
    return policy


def check_sensor(path: Path, policy_config: Any, env: Any) -> None:
    """Refuse, in one line, a checkpoint whose sensor is not the environment's: another ray grid, or
    (a policy reading the frontier map, which turns depth back into metres) another sensor horizon,
    which would place every mapped wall at the wrong distance without any error."""
    sensor = (policy_config.azimuth, policy_config.elevation)
    if tuple(env.observation_shape[1:]) != sensor:
        raise click.ClickException(
            f"{path} expects a {sensor} sensor but the environment gives {tuple(env.observation_shape[1:])}"
        )
    settings = getattr(env, "settings", None)  # the simulator's; other backends carry no horizon
    maps_depth = policy_config.visit_input and policy_config.visits.source == "frontiers"
    if settings is not None and maps_depth and policy_config.visits.horizon_m != settings.sensor.horizon_m:
        raise click.ClickException(
            f"{path} maps depth with a {policy_config.visits.horizon_m:g} m sensor horizon but the "
            f"environment's is {settings.sensor.horizon_m:g} m (NAVI_ENV_SENSOR__HORIZON_M): evaluate "
            "with the horizon it was trained with"
        )


def modes_for(mode: Mode, learned: bool) -> list[bool]:
    """Acting modes as ``deterministic`` flags; baselines act one way whatever the mode."""
    if not learned:
        return [True]
    return {"mean": [True], "sample": [False], "both": [True, False]}[mode]


def evaluate_specs(
    specs: list[str], env: Any, device: str, *, episodes_per_scene: int, mode: Mode, seed: int,
    paths: Path | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Fly every policy of ``specs`` in every mode on one plan; returns the JSON-able result.

    With ``paths`` (a folder), every episode's positions are kept and drawn: one PNG per scene with
    a panel per policy and mode (:mod:`navi_actor.evaluation.paths_png`), listed under ``paths``.
    """
    from navi_actor.evaluation.evaluator import evaluate_policy
    from navi_actor.evaluation.plan import make_plan

    if paths is not None and not (hasattr(env, "scenes") and hasattr(env, "poses")):
        raise click.ClickException("--paths draws scenes of the simulator: use --environment-backend sdfdag")
    if paths is not None:
        from navi_actor.evaluation.paths_png import prepare_folder

        try:
            prepare_folder(paths)
        except ValueError as error:
            raise click.ClickException(str(error)) from error
    plan = make_plan(env, episodes_per_scene, seed)
    blocks: list[dict[str, Any]] = []
    reports: list[tuple[str, str, Any]] = []  # (spec, mode label, report)
    for spec in specs:
        policy, learned = resolve_policy(spec, env, device)
        for deterministic in modes_for(mode, learned):
            report = evaluate_policy(
                policy, env, plan=plan, deterministic=deterministic, seed=seed, record_paths=paths is not None
            )
            summary = report.summary()
            summary["mode"] = summary["mode"] if learned else "own"
            blocks.append({"policy": spec, **summary})
            reports.append((spec, summary["mode"], report))
    result: dict[str, Any] = {
        "plan": {"scenes": int(plan.scenes.unique().numel()), "episodes_per_scene": episodes_per_scene,
                 "episodes": plan.size, "seed": seed, "drones": env.num_actors},
        "results": blocks,
    }  # fmt: skip
    if len(specs) == 2:
        result["paired"] = _paired_blocks(specs, reports)
    if paths is not None:
        from navi_actor.evaluation.paths_png import write_path_images

        files = write_path_images(paths, env, [report for _, _, report in reports])
        result["paths"] = {
            "files": [str(f) for f in files],
            "panels": [f"{spec} ({label})" for spec, label, _ in reports],  # left to right
        }
    return result


def _paired_blocks(specs: list[str], reports: list[tuple[str, str, Any]]) -> dict[str, Any]:
    """Second vs first policy, per acting mode (a baseline's one mode pairs with every mode)."""
    from navi_actor.evaluation.evaluator import compare_reports

    firsts = [(m, r) for s, m, r in reports if s == specs[0]]
    seconds = [(m, r) for s, m, r in reports if s == specs[1]]
    return {
        f"{second_mode} vs {first_mode}": compare_reports(first, second)
        for first_mode, first in firsts
        for second_mode, second in seconds
        if first_mode == second_mode or "own" in (first_mode, second_mode)
    }


def _cell(entry: dict[str, float], scale: float = 1.0, digits: int = 2) -> str:
    value, low, high = (entry[k] * scale for k in ("value", "ci95_low", "ci95_high"))
    if math.isnan(value):
        return "n/a"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def format_text(result: dict[str, Any]) -> str:
    """Human-readable lines: one block per policy and mode, intervals in brackets."""
    plan = result["plan"]
    lines = [
        f"plan: {plan['episodes']} episodes = {plan['scenes']} scenes x {plan['episodes_per_scene']} "
        f"starts (seed {plan['seed']}), {plan['drones']} drones at once; values [95% interval]"
    ]
    for block in result["results"]:
        lines.append(
            f"{block['policy']} ({block['mode']}): coverage {_cell(block['coverage_cells'], digits=1)} cells"
            f" = {_cell(block['coverage_share'], 100.0, 1)} % of reachable | collisions "
            f"{_cell(block['collisions_per_step'], 100.0)} % of steps, "
            f"{_cell(block['collisions_per_100m'])} per 100 m | path {_cell(block['path_m'], digits=1)} m "
            f"at {_cell(block['mean_speed_mps'])} m/s | return {_cell(block['return'])} | half coverage "
            f"after {_cell(block['steps_to_half_coverage'], digits=0)} steps | |yaw| "
            f"{_cell(block['mean_abs_yaw'])}, yaw bias {_cell(block['yaw_bias'])}"
        )
    if "paths" in result:
        panels = ", ".join(result["paths"]["panels"])
        lines.append(f"paths drawn (panels left to right: {panels}): " + " ".join(result["paths"]["files"]))
    for name, metrics in result.get("paired", {}).items():
        lines.append(
            f"second vs first ({name}): coverage x{_cell(metrics['coverage_cells']['ratio'])}, difference "
            f"{_cell(metrics['coverage_cells']['difference'], digits=1)} cells; collisions per step "
            f"x{_cell(metrics['collisions_per_step']['ratio'])}; return difference "
            f"{_cell(metrics['return']['difference'])}"
        )
    return "\n".join(lines)


def select_run(
    run: Path, env: Any, device: str, *, episodes_per_scene: int, seed: int, max_collision_ratio: float,
    confirm_episodes_per_scene: int,
) -> dict[str, Any]:  # fmt: skip
    """Judge every step checkpoint of ``run`` on its training scenes (:mod:`navi_actor.evaluation.selection`),
    copy the chosen one to ``<run>/best.pt`` and write ``<run>/selection.json`` (both atomically).

    Returns:
        The selection as JSON (``selection.json``), with ``best``, the copy's path.

    Raises:
        click.ClickException: no checkpoints, an unreadable one, or none of the run's scenes given.
    """
    from navi_actor.checkpoints import CheckpointError, load_checkpoint
    from navi_actor.evaluation.selection import run_checkpoints, select_checkpoint, trained_scene_indices
    from navi_common.atomic import atomic_write_bytes, atomic_write_json

    try:
        paths = run_checkpoints(run)
        trained_on = load_checkpoint(paths[-1]).corpus_summary.get("names")
        scenes = trained_scene_indices(env, trained_on if isinstance(trained_on, list) else None)
        for path in paths:  # a sensor mismatch fails before any flight (the file's config, no model built)
            check_sensor(path, load_checkpoint(path).policy_config, env)
        selection = select_checkpoint(
            paths, env, episodes_per_scene=episodes_per_scene, seed=seed,
            max_collision_ratio=max_collision_ratio, device=device, scenes=scenes,
            confirm_episodes_per_scene=confirm_episodes_per_scene,
            note=lambda line: click.echo(line, err=True),  # minutes per checkpoint: say each one
        )  # fmt: skip
    except (ValueError, CheckpointError) as error:
        raise click.ClickException(str(error)) from error
    folder = paths[0].parent.parent if paths[0].parent.name == "checkpoints" else paths[0].parent
    best = atomic_write_bytes(folder / "best.pt", Path(selection.chosen.path).read_bytes())
    result = {**selection.to_json(), "drones": env.num_actors, "best": str(best)}
    atomic_write_json(folder / "selection.json", result)
    return result


def format_selection(result: dict[str, Any]) -> str:
    """Human-readable lines of :func:`select_run`'s result: the plan, one line per checkpoint, the choice."""
    from navi_actor.evaluation.selection import Candidate

    scenes, starts = len(result["scenes"]) or "all", result["episodes_per_scene"]
    starts_text = f"{starts} start{'s' if starts != 1 else ''}"
    lines = [
        f"plan: {scenes} training scenes x {starts_text} (seed {result['seed']}), {result['drones']} drones "
        f"at once, mean action; random covers {result['random_coverage']:.2f} cells and collides on "
        f"{100 * result['random_collision_rate']:.1f} % of steps"
    ]
    limit = result["max_collision_ratio"]
    lines.extend(_candidate_line(Candidate(**row), limit) for row in result["candidates"])
    confirmation = result.get("confirmation")
    if confirmation is not None:
        per_scene = confirmation["episodes_per_scene"]
        lines.append(
            f"second plan: the same scenes x {per_scene} start{'s' if per_scene != 1 else ''} "
            f"(seed {confirmation['seed']}); random covers {confirmation['random_coverage']:.2f} cells"
        )
        lines.extend(_candidate_line(Candidate(**row), limit) for row in confirmation["candidates"])
    lines.append(f"chosen: step {result['chosen']['step_id']:,} ({result['rule']}) -> {result['best']}")
    if "promoted" in result:
        lines.append(result["promoted"])
    return "\n".join(lines)


def _candidate_line(candidate: Candidate, limit: float) -> str:
    """``step      102,400: coverage 3.20x random, collisions 0.02x random (careful)``."""
    from navi_actor.evaluation.selection import describe

    mark = "careful" if candidate.careful else f"collides more than {limit}x as often as random"
    return f"step {candidate.step_id:>12,}: {describe(candidate)} ({mark})"
