"""The ten environment reward terms, batched."""

from navi_environment.step.rewards.terms import REWARD_TERMS, RewardInputs, Rewards

__all__ = ["REWARD_TERMS", "RewardInputs", "Rewards"]
