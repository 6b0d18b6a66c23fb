"""Telemetry event types and metric names: the one list every producer publishes and the dashboard reads.

Why one list: the brain published ``actor.service.stats`` with ``steps_per_second`` and
``mean_episode_return`` while the dashboard knew only ``actor.training.*`` / ``actor.inference.*``
with ``sps`` / ``episode_return``, so the service stack showed OBSERVER and empty charts. Producers
take their event types and payload keys from here; the dashboard takes its mode rules, its chart
list and its name mapping from here; a test checks that every published name is understood.

Metric names are canonical (as charted). The trainer's per-update record keeps the CleanRL
namespaces (``charts/``, ``losses/``, ``time/``) for its JSONL and TensorBoard logs;
:func:`canonical_metric_name` maps them onto the same names.
"""

from __future__ import annotations

from functools import lru_cache

# --- event types -------------------------------------------------------------------------------
TRAINING_PREFIX = "actor.training."
"""Events of ``navi-actor train``: the dashboard shows TRAINING while they arrive."""
TRAINING_UPDATE = "actor.training.ppo.update"
TRAINING_HEARTBEAT = "actor.training.heartbeat"
INFERENCE_SOURCE = "actor.inference"
"""``navi-actor infer``: events ``actor.inference.<name>``."""
SERVICE_SOURCE = "actor.service"
"""The brain (``navi-actor serve``): events ``actor.service.<name>``."""
ACTING_PREFIXES = (f"{INFERENCE_SOURCE}.", f"{SERVICE_SOURCE}.")
"""A policy acting without learning (in-process or as a service): the dashboard shows INFERENCE."""
STATS = "stats"
"""``<source>.stats``: the periodic acting summary."""
RESYNCED = "resynced"
"""``<source>.resynced``: the brain re-synchronised with a (restarted) environment."""
ENVIRONMENT_STEP = "environment.step"
"""``navi-environment serve``: one event per step."""
ENVIRONMENT_REALTIME_STATS = "environment.realtime.stats"
"""``navi-environment serve --mode realtime``: the periodic real-time control summary."""


def acting_event(source: str, name: str) -> str:
    """``<source>.<name>``, e.g. ``actor.service.stats``."""
    return f"{source}.{name}"


# --- metric names (canonical) -----------------------------------------------------------------
STEPS = "steps"
DRONE_STEPS = "drone_steps"
SPS = "sps"
EPISODES = "episodes"
EPISODE_RETURN = "episode_return"
EPISODE_SHAPED_RETURN = "episode_shaped_return"
EPISODE_LENGTH = "episode_length"
REWARD_EMA = "reward_ema"
COLLISION_RATE = "collision_rate"
COVERAGE = "coverage"
SPEED = "speed"
POLICY_LOSS = "policy_loss"
VALUE_LOSS = "value_loss"
KL = "kl"
ENTROPY = "entropy"
LATENCY_P50_MS = "latency_p50_ms"
LATENCY_P99_MS = "latency_p99_ms"
ACTIVE_ACTORS = "active_actors"
REWARD_TERM_PREFIX = "reward/"
TIMING_PREFIX = "timing/"
MEAN_ACTION_AGE_TICKS = "mean_action_age_ticks"
"""Real-time mode: mean ticks between the observation an executed action answered and its tick."""
MAX_ACTION_AGE_TICKS = "max_action_age_ticks"
MISSED_TICKS = "missed_ticks"
"""Real-time mode: control tick slots the environment's loop missed (it overran them)."""
FALLBACK_TICKS = "fallback_ticks"
"""Real-time mode: drone-ticks executed without a scheduled action (the fallback ran)."""
GUARDED_TICKS = "guarded_ticks"
"""Real-time mode: drone-ticks whose action the collision guard changed (``serve --guard``)."""
MISSED_PERIODS = "missed_periods"
"""Real-time brain: control periods its control loop missed (it must never wait on inference)."""
DELAY_TICKS = "delay_ticks"
"""Real-time brain: its running estimate of the inference delay, in control ticks."""

CHARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Reward EMA", (REWARD_EMA,)),
    ("Episode return", (EPISODE_RETURN, EPISODE_SHAPED_RETURN)),
    ("Episode length", (EPISODE_LENGTH,)),
    ("Collision rate", (COLLISION_RATE,)),
    ("PPO losses", (POLICY_LOSS, VALUE_LOSS)),
    ("KL divergence", (KL,)),
    ("Entropy", (ENTROPY,)),
    ("Steps per second", (SPS,)),
    ("Step latency (ms)", (LATENCY_P50_MS, LATENCY_P99_MS)),
    ("Stage timings (s)", (TIMING_PREFIX,)),
    ("Coverage and speed", (COVERAGE, SPEED)),
    ("Real-time action age (ticks)", (MEAN_ACTION_AGE_TICKS, MAX_ACTION_AGE_TICKS, DELAY_TICKS)),
    ("Real-time missed / fallback / guarded ticks",
     (MISSED_TICKS, FALLBACK_TICKS, MISSED_PERIODS, GUARDED_TICKS)),
    ("Reward terms over time", (REWARD_TERM_PREFIX,)),
)
"""The dashboard's charts: title -> series names (a name ending in ``/`` charts every key under it)."""

STATUS_ONLY = frozenset({
    STEPS, DRONE_STEPS, EPISODES, ACTIVE_ACTORS, "step_id", "scene", "learning_rate", "epochs",
    "kl_early_stop", "grad_norm", "clip_fraction", "explained_variance", "value_mean", "log_std_mean",
    "updating", "resyncs", "resent_actions", "link_failures", "reward_mean", "actors", "collision",
    "reference_kl", "auxiliary_loss", "bc_holdout_mse", "bc_baseline_mse", "bc_nll", "bc_mse",
    "tick", "control_hz", "ticks_executed", "fallback_fraction", "accepted_actions", "stale_actions",
    "rejected_actions", "control_periods", "exhausted_periods", "published_actions", "observations",
    "inferences", "skipped_observations", "chunk_loss", "symmetry_loss", "self_imitation_loss",
})  # fmt: skip
"""Names the dashboard shows in its status panels (latest value) without a chart of their own."""

_PREFIX_RENAMES = (("charts/", ""), ("losses/", ""), ("time/", "timing/"))
_ALIASES = {"approx_kl": KL}


@lru_cache(maxsize=4096)
def canonical_metric_name(name: str) -> str:
    """The canonical name of a payload key (``losses/approx_kl`` -> ``kl``, ``time/x`` -> ``timing/x``).

    Unknown keys pass unchanged.
    """
    for prefix, replacement in _PREFIX_RENAMES:
        if name.startswith(prefix):
            name = replacement + name[len(prefix) :]
            break
    return _ALIASES.get(name, name)


def charted(name: str) -> bool:
    """Whether a canonical name lands on one of :data:`CHARTS`."""
    for _, series in CHARTS:
        for wanted in series:
            if name == wanted or (wanted.endswith("/") and name.startswith(wanted)):
                return True
    return False


def understood(name: str) -> bool:
    """Whether the dashboard charts or shows a published payload key (any spelling)."""
    canonical = canonical_metric_name(name)
    return charted(canonical) or canonical in STATUS_ONLY


def is_acting_event(event_type: str) -> bool:
    """An event of a policy acting without learning (``navi-actor infer`` or the brain)."""
    return event_type.startswith(ACTING_PREFIXES)
