"""Model registry: promoted checkpoints with latest and best."""

from navi_actor.registry.model_registry import ModelRegistry, RegistryEntry, RegistryError

__all__ = ["ModelRegistry", "RegistryEntry", "RegistryError"]
