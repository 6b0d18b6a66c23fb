"""Training runners: building the environment a command asks for, rollout collection and the PPO loop.

The environments themselves and their protocol are in :mod:`navi_actor.envs`.
"""
