"""Stable-Baselines3 PPO on ``Navi/Explore-v0`` vs Navi's own trainer, on the same scene.

Prints ONE JSON line. Both train on one scene (``--scene``, default ``procedural:apartment``, compiled
into ``artifacts/gmdag/cache/`` on first use) with the default environment settings (256x48 sensor,
episodes truncated at 500 steps as the trainer does), 4 drones and 128 steps per drone per rollout:

* ``navi``: the default trainer (``OnPolicyRunner``: rayvit + mamba2 policy, one batched backend);
* ``sb3``: SB3 PPO with ``MlpPolicy`` (64x64) over SB3's ``DummyVecEnv`` of 4 ``Navi/Explore-v0``
  environments (its documented way to train on a Gymnasium env), same rollout size, 4 epochs;
* ``env_only``: the environment alone under random actions, stepped the two ways: Navi's batched
  ``gymnasium.make_vec`` (one backend, 4 drones) and SB3's ``DummyVecEnv`` of 4 one-drone envs.

After one warm-up rollout+update each (numba and allocator warm-up), ``--iterations`` rollouts+updates
are timed; steps/s counts environment steps of all drones per wall-clock second. docs/interop.md
explains the difference.

    uv run python scripts/bench_interop.py [--scene procedural:apartment] [--iterations 2] [--threads 2]
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import gymnasium as gym
import numpy as np
import torch

ACTORS = 4
ROLLOUT = 128
EPISODE_STEPS = 500


def navi_trainer_rate(scene: Path, iterations: int) -> dict[str, Any]:
    """Steps/s of the default trainer on ``scene`` (rollouts + PPO updates)."""
    from navi_actor.config import ActorSettings
    from navi_actor.runners.env_factory import build_environment
    from navi_actor.runners.on_policy_runner import OnPolicyRunner

    values: dict[str, Any] = {
        "environment": {"gmdag_file": scene},
        "rollout": {"num_actors": ACTORS, "rollout_length": ROLLOUT},
        "telemetry": {"enabled": False},
        "checkpoint": {"auto_resume": False, "auto_promote": False},
    }
    settings = ActorSettings(**values)
    from navi_environment.config import EnvironmentSettings

    env_settings = EnvironmentSettings(episode={"max_steps": EPISODE_STEPS})  # the default, stated
    built = build_environment(settings.environment, ACTORS, "cpu", env_settings)
    runner = OnPolicyRunner(settings, built, artifacts_dir=Path(tempfile.mkdtemp(prefix="navi-interop-")))
    rollout = settings.rollout

    def iteration() -> tuple[int, float, float]:
        started = time.perf_counter()
        stats = runner.collector.collect(rollout.gamma, rollout.gae_lambda)
        collected = time.perf_counter()
        runner.learner.update(runner.storage, runner.shuffle, runner.shaping.auxiliary_step)
        return stats.env_steps, collected - started, time.perf_counter() - collected

    iteration()  # warm-up
    rounds = [iteration() for _ in range(iterations)]
    steps, collect, update = (sum(values) for values in zip(*rounds, strict=True))
    policy = runner.policy.cfg
    return {
        "steps_per_second": round(steps / (collect + update), 2),
        "rollout_seconds": round(collect, 2),
        "update_seconds": round(update, 2),
        "policy": f"{policy.encoder_backend}+{policy.temporal_core}",
        "parameters": sum(p.numel() for p in runner.policy.parameters()),
    }


def sb3_rate(scene: Path, iterations: int) -> dict[str, Any]:
    """Steps/s of SB3 PPO (MlpPolicy) over a DummyVecEnv of ``ACTORS`` one-drone Navi envs."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import Logger

    vec = make_vec_env("Navi/Explore-v0", n_envs=ACTORS, env_kwargs=_env_kwargs(scene))
    model = PPO("MlpPolicy", vec, n_steps=ROLLOUT, batch_size=ROLLOUT, n_epochs=4, seed=0, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))  # else learn() leaves $TMPDIR/SB3-<time>
    model.learn(total_timesteps=ROLLOUT * ACTORS)  # warm-up
    started = time.perf_counter()
    model.learn(total_timesteps=ROLLOUT * ACTORS * iterations, reset_num_timesteps=False)
    seconds = time.perf_counter() - started
    return {
        "steps_per_second": round(ROLLOUT * ACTORS * iterations / seconds, 2),
        "policy": "MlpPolicy 64x64",
        "parameters": sum(p.numel() for p in model.policy.parameters()),
    }


def env_only_rates(scene: Path, steps: int) -> dict[str, float]:
    """Random-action steps/s: Navi's batched make_vec vs SB3's DummyVecEnv of one-drone envs."""
    from stable_baselines3.common.env_util import make_vec_env

    rng = np.random.default_rng(0)
    batched = gym.make_vec("Navi/Explore-v0", num_envs=ACTORS, **_env_kwargs(scene))
    dummy = make_vec_env("Navi/Explore-v0", n_envs=ACTORS, env_kwargs=_env_kwargs(scene))
    batched.reset(seed=0)
    dummy.reset()
    rates = {}
    for name, step in (("navi_make_vec", batched.step), ("sb3_dummy_vec_env", dummy.step)):
        actions = rng.uniform(-1.0, 1.0, (steps, ACTORS, 4)).astype(np.float32)
        step(actions[0])  # warm-up
        started = time.perf_counter()
        for action in actions:
            step(action)
        rates[name] = round(steps * ACTORS / (time.perf_counter() - started), 2)
    return rates


def _env_kwargs(scene: Path) -> dict[str, Any]:
    return {"scene": str(scene), "episode": {"max_steps": EPISODE_STEPS}}


@click.command()
@click.option("--scene", default="procedural:apartment", show_default=True, help="scene= of Navi/Explore-v0.")
@click.option("--iterations", type=int, default=2, show_default=True, help="Timed rollouts+updates each.")
@click.option("--env-steps", type=int, default=100, show_default=True, help="Timed env-only batch steps.")
@click.option("--threads", type=int, default=None, help="torch threads (default: torch's choice).")
def main(scene: str, iterations: int, env_steps: int, threads: int | None) -> None:
    """Measure SB3 PPO and Navi's trainer on the same scene; print one JSON line."""
    from navi_common.logging import configure_logging
    from navi_environment.config import EnvironmentSettings
    from navi_environment.gym_scenes import scene_file

    configure_logging("warning")  # log lines go to stderr; stdout is the one JSON line
    if threads is not None:
        torch.set_num_threads(threads)
    compiled = scene_file(scene, EnvironmentSettings())
    navi = navi_trainer_rate(compiled, iterations)
    sb3 = sb3_rate(compiled, iterations)
    env_only = env_only_rates(compiled, env_steps)
    print(
        json.dumps(
            {
                "benchmark": "interop",
                "scene": scene,
                "navi_trainer": navi,
                "sb3_ppo": sb3,
                "sb3_over_navi": round(sb3["steps_per_second"] / navi["steps_per_second"], 3),
                "env_only_steps_per_second": env_only,
                "actors": ACTORS,
                "rollout_length": ROLLOUT,
                "observation_shape": [
                    3,
                    *EnvironmentSettings()
                    .sensor.model_dump(include={"azimuth_bins", "elevation_bins"})
                    .values(),
                ],
                "torch_threads": torch.get_num_threads(),
                "machine": platform.machine(),
                "cpu_count": os.cpu_count(),
            }
        )
    )


if __name__ == "__main__":
    main()
