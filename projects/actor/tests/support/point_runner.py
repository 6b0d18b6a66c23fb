"""The trainer's smallest real configuration: a tiny policy on the point toy, for the runner tests.

Test support, not part of the package: pytest puts this folder on ``sys.path`` (``pythonpath`` in
the root ``pyproject.toml``), so tests import it as ``point_runner``.
"""

from __future__ import annotations

from typing import Any

from navi_actor.config import ActorSettings

TINY_POLICY = {"embed_dim": 32, "vit_dim": 32, "vit_layers": 1, "ssm_head_dim": 16, "ssm_chunk": 8}


def point_settings(**overrides: Any) -> ActorSettings:
    """Two drones x 16 steps a rollout, 2 epochs of 2 minibatches, 64 steps; a dict override is
    merged into its group, anything else replaces the field."""
    values: dict[str, Any] = {
        "temporal_core": "gru",
        "policy": TINY_POLICY,
        "environment": {"backend": "point", "point_azimuth": 16, "point_elevation": 8, "point_max_steps": 10},
        "rollout": {"num_actors": 2, "rollout_length": 16, "sequence_length": 8},
        "ppo": {"epochs": 2, "num_minibatches": 2},
        "telemetry": {"enabled": False},
        "train": {"total_steps": 64},
        "checkpoint": {"every_steps": 10_000},
    }
    for key, value in overrides.items():
        values[key] = {**values[key], **value} if isinstance(value, dict) and key in values else value
    return ActorSettings(**values)


def interrupt_at_update(runner: Any, update: int) -> None:
    """Make ``runner``'s ``update``-th PPO update raise KeyboardInterrupt (Ctrl+C mid-update)."""
    original, calls = runner.learner.update, {"n": 0}

    def interrupting(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == update:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    runner.learner.update = interrupting
