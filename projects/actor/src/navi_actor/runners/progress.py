"""Training counters (checkpointed) and the human progress line."""

from __future__ import annotations

import time
from dataclasses import dataclass

from navi_actor.algorithms.ppo import UpdateResult
from navi_actor.runners.rollout_collector import RolloutStats


@dataclass
class TrainingCounters:
    """The learning curve's position; saved in every checkpoint and restored on resume."""

    step_id: int = 0  # environment steps over all drones since the policy was created
    episode_count: int = 0
    reward_ema: float | None = None  # EMA of finished episodes' environment returns
    wall_time_hours: float = 0.0

    def record(self, stats: RolloutStats, alpha: float, seconds: float) -> None:
        """Advance the counters by one rollout that took ``seconds`` including its update."""
        self.step_id += stats.env_steps
        self.episode_count += len(stats.finished_returns)
        for episode_return in stats.finished_returns:
            if self.reward_ema is None:
                self.reward_ema = episode_return
            else:
                self.reward_ema += alpha * (episode_return - self.reward_ema)
        self.wall_time_hours += seconds / 3600.0


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def update_record(
    counters: TrainingCounters, stats: RolloutStats, result: UpdateResult, steps_per_second: float
) -> dict[str, float]:
    """Flat metrics of one update (``charts/``, ``losses/``, ``time/``, ``reward/`` namespaces)."""
    record: dict[str, float] = {
        "charts/step_id": float(counters.step_id),
        "charts/episodes": float(counters.episode_count),
        "charts/sps": steps_per_second,
        "charts/reward_ema": counters.reward_ema if counters.reward_ema is not None else float("nan"),
        "charts/episode_return": _mean(stats.finished_returns),
        "charts/episode_shaped_return": _mean(stats.finished_shaped_returns),
        "charts/episode_length": _mean(stats.finished_lengths),
        "charts/coverage": _mean(stats.finished_coverage),
        "charts/collision_rate": stats.collision_rate,
        "charts/speed": stats.mean_speed,
        "charts/learning_rate": result.learning_rate,
        "charts/epochs": float(result.epochs_run),
        "charts/kl_early_stop": float(result.early_stopped),
        "charts/active_actors": float(stats.num_actors),
        "charts/scene": stats.scene_of_actor0,
    }
    record |= {f"losses/{name}": value for name, value in result.metrics.items()}
    record |= {f"reward/{name}": value for name, value in stats.reward_terms.items()}
    record |= {f"time/rollout_{name}": value for name, value in stats.timings.items()}
    record |= {f"time/update_{name}": value for name, value in result.timings.items()}
    return record


def progress_line(record: dict[str, float]) -> str:
    """One compact line for a terminal."""

    def get(key: str) -> float:
        return record.get(key, float("nan"))

    return (
        f"step {int(get('charts/step_id')):,} | {get('charts/sps'):.1f} sps"
        f" | reward_ema {get('charts/reward_ema'):.3f}"
        f" | ep_return {get('charts/episode_return'):.3f} len {get('charts/episode_length'):.0f}"
        f" | collisions {100 * get('charts/collision_rate'):.1f}%"
        f" | pi {get('losses/policy_loss'):.4f} v {get('losses/value_loss'):.4f}"
        f" ent {get('losses/entropy'):.3f} kl {get('losses/approx_kl'):.4f}"
    )


class Stopwatch:
    """Monotonic seconds since construction or the last :meth:`lap`."""

    def __init__(self) -> None:
        self._start = self._lap = time.monotonic()

    def lap(self) -> float:
        """Seconds since the previous lap."""
        now = time.monotonic()
        elapsed, self._lap = now - self._lap, now
        return elapsed

    def total(self) -> float:
        """Seconds since construction."""
        return time.monotonic() - self._start
