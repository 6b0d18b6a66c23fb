"""Training runners: the in-process environment contract, rollout collection and the PPO loop."""
