"""A checkpoint file turned into a policy ready to act.

Evaluation, the DAgger pilot, checkpoint selection and the learning benchmark all need the same
three steps (read the file, build the network its config describes, load the weights); one function
keeps them the same everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import torch

from navi_actor.checkpoints.format import Checkpoint, load_checkpoint

if TYPE_CHECKING:
    from navi_actor.models import NaviPolicy


def load_policy(path: Path, device: str | torch.device = "cpu") -> tuple[NaviPolicy, Checkpoint]:
    """``(policy, checkpoint)``: the stored policy on ``device`` in eval mode, and the file's contents.

    Raises:
        navi_actor.checkpoints.CheckpointError: the file is missing, unreadable or of another format.
    """
    from navi_actor.models import NaviPolicy

    loaded = load_checkpoint(path, map_location=device)
    policy = NaviPolicy(loaded.policy_config).to(device)
    policy.load_state_dict(loaded.model)
    return policy.eval(), loaded
