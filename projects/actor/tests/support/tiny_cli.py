"""The smallest policy and point environment a CLI test can train: the env vars every such test sets.

Why one place: eight test files carried the same seven variables; a change to the policy's size
limits (or a renamed field) must reach all of them at once.
"""

TINY_POLICY_ENV = {
    "NAVI_ACTOR_POLICY__EMBED_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_DIM": "32",
    "NAVI_ACTOR_POLICY__VIT_LAYERS": "1",
    "NAVI_ACTOR_ENVIRONMENT__POINT_AZIMUTH": "16",
    "NAVI_ACTOR_ENVIRONMENT__POINT_MAX_STEPS": "10",
    "NAVI_ACTOR_ROLLOUT__SEQUENCE_LENGTH": "8",
    "NAVI_ACTOR_PPO__NUM_MINIBATCHES": "2",
}

TINY_ARGS = ["--environment-backend", "point", "--num-actors", "2", "--torch-threads", "1"]
"""The command-line half: the point environment with two drones on one torch thread."""

TINY_TRAIN = ["train", *TINY_ARGS, "--temporal-core", "gru", "--total-steps", "32",
              "--rollout-length", "16", "--no-telemetry"]  # fmt: skip
"""A 32-step ``navi-actor train`` (two rollouts of 16) without a telemetry socket."""
