"""Where the acting policy comes from: an explicit checkpoint, the registry's latest model, or a fresh
(untrained) policy with a warning.

Loading is split in two so that a broken checkpoint fails at start-up, while the sensor shape, which
a service learns only from the first observation, is checked when the policy is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import structlog
import torch

from navi_actor.checkpoints import Checkpoint, load_checkpoint
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.registry import ModelRegistry

log = structlog.get_logger()

FRESH_POLICY_ID = "fresh"


@dataclass(frozen=True)
class PolicySource:
    """A resolved policy origin.

    Attributes:
        checkpoint: the loaded checkpoint, or None for a fresh policy.
        policy_id: what ``Action.policy_id`` carries: ``v003``, the checkpoint file name, or ``fresh``.
        path: the file it came from (None when fresh).
    """

    checkpoint: Checkpoint | None
    policy_id: str
    path: Path | None


def resolve_policy_source(checkpoint: Path | None, registry_folder: Path) -> PolicySource:
    """Load ``checkpoint``, else the registry's latest model, else choose a fresh policy.

    Args:
        checkpoint: an explicit v3 checkpoint (``--checkpoint``); errors if unreadable.
        registry_folder: ``artifacts/models``.

    Returns:
        The :class:`PolicySource`.

    Raises:
        navi_actor.checkpoints.CheckpointError: the checkpoint (explicit or latest) cannot be read.
        ValueError: the registry index is malformed.
    """
    if checkpoint is not None:
        loaded = load_checkpoint(checkpoint)
        log.info("actor.inference.checkpoint_loaded", path=str(checkpoint), step_id=loaded.step_id)
        return PolicySource(loaded, checkpoint.stem, checkpoint)
    registry = ModelRegistry(registry_folder)
    entry = registry.latest()
    if entry is None:
        log.warning(
            "actor.inference.fresh_policy",
            reason=f"no model in {registry_folder}; acting with an untrained policy",
        )
        return PolicySource(None, FRESH_POLICY_ID, None)
    path = registry.path_of(entry)
    loaded = load_checkpoint(path)
    log.info("actor.inference.registry_model_loaded", version=entry.version, path=str(path))
    return PolicySource(loaded, f"v{entry.version:03d}", path)


def build_policy(
    source: PolicySource,
    fresh_config: PolicyConfig,
    observation_shape: tuple[int, int, int],
    *,
    device: torch.device | str = "cpu",
    seed: int = 0,
) -> NaviPolicy:
    """Instantiate the policy of ``source`` for observations of ``observation_shape``.

    Args:
        source: from :func:`resolve_policy_source`.
        fresh_config: architecture of a fresh policy (its sensor size is replaced by the observation's).
        observation_shape: ``(C, Az, El)`` of the observations it will see.
        device: torch device.
        seed: seeds the initial weights of a fresh policy (same seed, same untrained policy).

    Returns:
        The policy in eval mode on ``device``.

    Raises:
        ValueError: the checkpoint was trained for another sensor shape.
    """
    channels, azimuth, elevation = (int(v) for v in observation_shape)
    if source.checkpoint is None:
        config = fresh_config.model_copy(
            update={"in_channels": channels, "azimuth": azimuth, "elevation": elevation}
        )
        config = PolicyConfig.model_validate(config.model_dump())  # re-check patch divisibility
        generator_state = torch.random.get_rng_state()
        torch.manual_seed(seed)
        policy = NaviPolicy(config)
        torch.random.set_rng_state(generator_state)  # do not leak seeding into the caller
    else:
        config = source.checkpoint.policy_config
        expected = (config.in_channels, config.azimuth, config.elevation)
        if expected != (channels, azimuth, elevation):
            raise ValueError(
                f"policy {source.policy_id} ({source.path}) expects observations {expected} "
                f"(channels, azimuth, elevation) but the environment sends {(channels, azimuth, elevation)}"
            )
        policy = NaviPolicy(config)
        policy.load_state_dict(source.checkpoint.model)
    return policy.to(device).eval()
