"""Training counters (checkpointed) and the human progress line."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from navi_actor.algorithms.update_metrics import UpdateResult
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
        for episode_return in stats.finished_returns:
            self.episode_count += 1
            # The running mean until 1/alpha episodes are in, then the EMA: the first value is the
            # mean of every episode finished so far, not the first episode alone (which read -152.9
            # against a mean of -41.0 in a fresh run).
            weight = max(alpha, 1.0 / self.episode_count)
            previous = episode_return if self.reward_ema is None else self.reward_ema
            self.reward_ema = previous + weight * (episode_return - previous)
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


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def _number(value: float, fmt: str) -> str:
    """``value`` formatted, or an en dash while there is nothing to show (no episode finished yet)."""
    return "\u2013" if math.isnan(value) else format(value, fmt)


_EPISODE_METRICS = ("charts/coverage", "charts/episode_return", "charts/episode_length")


def carry_forward(shown: dict[str, float], record: dict[str, float]) -> dict[str, float]:
    """``record`` for display, with episode metrics kept from earlier updates when no episode ended.

    Why: coverage and returns are means over the episodes that finished in one rollout; most
    rollouts finish none, and the line read "coverage -" for most of a run.
    """
    kept = {
        key: shown[key] for key in _EPISODE_METRICS if key in shown and math.isnan(record.get(key, math.nan))
    }
    return record | kept


@dataclass(frozen=True)
class RunProgress:
    """Where the run stands beside one update's record: the parts a metrics line does not hold."""

    elapsed_seconds: float
    steps_this_run: int
    eta_seconds: float | None = None  #: None when the run is unbounded
    last_checkpoint_step: int | None = None


def progress_line(record: dict[str, float], run: RunProgress | None = None) -> str:
    """One compact line for a terminal: time, steps, speed, ETA, episodes, reward, losses, checkpoint."""

    def get(key: str) -> float:
        return record.get(key, float("nan"))

    parts = []
    if run is not None:
        eta = "" if run.eta_seconds is None else f" | ETA {_clock(run.eta_seconds)}"
        parts.append(f"{_clock(run.elapsed_seconds)}{eta}")
    steps = f"step {int(get('charts/step_id')):,}"
    if run is not None and run.steps_this_run != int(get("charts/step_id")):
        steps += f" (+{run.steps_this_run:,})"
    parts += [
        f"{steps} {get('charts/sps'):.0f}/s",
        f"episodes {int(get('charts/episodes')):,}",
        f"reward {_number(get('charts/reward_ema'), '.2f')}",
        f"coverage {_number(get('charts/coverage'), '.1f')} cells",
        f"collisions {_number(100 * get('charts/collision_rate'), '.1f')}%",
        f"pi {get('losses/policy_loss'):.3f} v {get('losses/value_loss'):.3f}"
        f" ent {get('losses/entropy'):.2f} kl {get('losses/approx_kl'):.4f}",
    ]
    if run is not None:
        last = run.last_checkpoint_step
        parts.append("ckpt \u2013" if last is None else f"ckpt {last:,}")
    return " | ".join(parts)


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
