"""Cross-package: autopilot demonstrations recorded by navi-auditor train navi-actor's policy by
behaviour cloning, and the policy imitates the autopilot on held-out episodes far better than the
mean-action baseline (the chance level of a regression)."""

from __future__ import annotations

import pytest
import torch

from navi_actor.bc import BCConfig, load_demonstrations, split_episodes, train_bc
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_auditor.demos import load_demonstration
from navi_auditor.demos.batch_recorder import record_autopilot_batch
from navi_auditor.demos.replay import replay_demonstration
from navi_environment.config import EnvironmentSettings, SceneSettings, SensorSettings
from navi_environment.runtime.analytic import RoomSpec, room_scene

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

ROOM = RoomSpec(hi=(12.0, 9.0, 3.0), thin_wall_x=7.0, thin_wall_thickness=0.3, thin_wall_gap=(3.0, 5.5),
                pillars=((3.0, 4.0, 0.4), (9.5, 6.5, 0.5)))  # fmt: skip
ENV = EnvironmentSettings(
    sensor=SensorSettings(azimuth_bins=32, elevation_bins=8), scene=SceneSettings(spawn_candidates=128)
)
# spherical_cnn: on a 32 x 8 sensor rayvit sees only 4 patch tokens and imitates far slower.
POLICY = PolicyConfig(
    visit_input=False,
    azimuth=32, elevation=8, encoder_backend="spherical_cnn", temporal_core="gru", embed_dim=48
)


def test_bc_policy_imitates_the_autopilot_on_held_out_episodes(tmp_path) -> None:
    scene = room_scene(ROOM, resolution=64)
    files = record_autopilot_batch(ENV, scene, drones=8, steps=150, out_dir=tmp_path, seed=4)
    assert len(files) == 8
    first = load_demonstration(files[0])
    assert first.metadata["batch_drones"] == 8 and first.metadata["pilot"] == "autopilot"
    with pytest.raises(ValueError, match="batch of 8"):
        replay_demonstration(first, scenes={scene.name: scene})

    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(0)
    data = load_demonstrations(files)
    train, holdout = split_episodes(data, 0.25, generator)
    assert len(holdout) >= 150
    policy = NaviPolicy(POLICY)
    config = BCConfig(epochs=16, sequence_length=16, streams=8, learning_rate=3e-3)
    history = train_bc(policy, train, holdout, config, generator)
    assert history.train_nll[-1] < history.train_nll[0]
    assert history.holdout_mse[-1] < 0.55 * history.baseline_mse, (history.holdout_mse, history.baseline_mse)
