"""Visit features of demonstration frames, for cloning a policy that reads its visit memory.

Why: with ``policy.visit_input`` the policy's core reads, at every step, where around it the drone
has already been this episode (:mod:`navi_actor.memory.visits`). Cloning must feed each frame the
features the drone would have read there, so the clone learns the input from the planner's flights
(the planner heads for unvisited space): every episode is replayed through a
:class:`~navi_actor.memory.visits.VisitMemory` from its recorded poses, all episodes side by side.
"""

from __future__ import annotations

import torch

from navi_actor.bc.dataset import DemoData, DemonstrationError
from navi_actor.memory.config import VisitMemoryConfig
from navi_actor.memory.frontiers import new_visit_reader


def demo_visit_features(data: DemoData, cfg: VisitMemoryConfig) -> torch.Tensor:
    """``[N, F]`` visit features of every frame of ``data`` (each episode from its first frame)."""
    if data.positions is None or data.yaws is None:
        raise DemonstrationError(
            "this policy reads or predicts its visit memory (policy.visit_input, visit_prediction), "
            "which needs the pose of every "
            "demonstration frame: record the demonstrations again with this version"
        )
    bounds = data.episode_bounds
    episodes = bounds.shape[0]
    features = torch.zeros(len(data), cfg.features)
    if episodes == 0:
        return features
    lengths = bounds[:, 1] - bounds[:, 0]
    _, azimuth, elevation = data.observation_shape
    memory = new_visit_reader(cfg, episodes, azimuth, elevation)
    for t in range(int(lengths.max())):
        live = t < lengths  # [E] episodes that still have a frame t
        frame = torch.where(live, bounds[:, 0] + t, bounds[:, 0])  # finished rows re-read a frame
        start = torch.full_like(live, t == 0)
        read = memory.observe(
            data.positions[frame], data.yaws[frame], start, data.observations[frame].float()
        )
        features[frame[live]] = read[live]
    return features
