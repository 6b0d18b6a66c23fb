"""navi-actor: Navi's cognitive engine, PPO trainer and brain service."""

__version__ = "0.1.0"
