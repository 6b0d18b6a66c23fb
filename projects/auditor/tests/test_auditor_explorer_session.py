"""Explorer session on an exact analytic room: recording, replay reproducing the trajectory,
live publishing of what the drone sees."""

from __future__ import annotations

import json

import numpy as np
import pytest

from navi_auditor.demos import DemoWriter, load_demonstration
from navi_auditor.demos.replay import replay_demonstration
from navi_auditor.explorer.autopilot import Autopilot
from navi_auditor.explorer.session import ExplorerSession
from navi_auditor.settings import AutopilotSettings
from navi_common import PeerTimeoutError, Publisher, Subscriber, free_tcp_endpoint
from navi_contracts import DistanceMatrix, topics

STEPS_PER_SCENE = 40


def fly(session: ExplorerSession, autopilot: Autopilot, scenes: int) -> None:
    for _ in range(scenes):
        assert session.next_scene()
        for _ in range(STEPS_PER_SCENE):
            session.step(autopilot(session.observation)[0].numpy())
    assert not session.next_scene()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, small_env_settings, room):
    path = tmp_path_factory.mktemp("demo") / "flight.npz"
    sensor = small_env_settings.sensor
    metadata = {"pilot": "autopilot", "environment_settings": small_env_settings.model_dump_json()}
    writer = DemoWriter(path, (sensor.azimuth_bins, sensor.elevation_bins), metadata, part_frames=16)
    session = ExplorerSession(small_env_settings, [room, room], base_seed=11, writer=writer)
    autopilot = Autopilot(AutopilotSettings(), sensor.horizon_m, sensor.azimuth_bins, sensor.elevation_bins)
    fly(session, autopilot, scenes=2)
    assert session.close() == path
    return path, session


def test_recording_holds_every_step_with_executed_actions(recorded, small_env_settings) -> None:
    path, session = recorded
    demo = load_demonstration(path)
    assert len(demo) == 2 * STEPS_PER_SCENE == session.total_steps
    assert demo.segment_seeds.tolist() == [11, 12]
    assert demo.frames["segment_ids"].tolist() == [0] * STEPS_PER_SCENE + [1] * STEPS_PER_SCENE
    assert demo.episode_starts[0] and demo.episode_starts[STEPS_PER_SCENE]
    assert np.abs(demo.actions).max() <= 1.0 and np.abs(demo.actions).max() > 0.1
    assert demo.observations.shape[1:] == (3, 32, 8)
    assert demo.observations[:, 0].min() >= 0.0 and demo.observations[:, 0].max() <= 1.0
    moved = np.linalg.norm(demo.frames["positions"][STEPS_PER_SCENE - 1] - demo.frames["positions"][0])
    assert moved > 1.0  # the autopilot actually flew
    settings = json.loads(demo.metadata["environment_settings"])
    assert settings["sensor"]["azimuth_bins"] == 32


def test_replaying_recorded_actions_reproduces_the_observations(recorded, room) -> None:
    path, _ = recorded
    demo = load_demonstration(path)
    check = replay_demonstration(demo, scenes={room.name: room})
    assert check.frames == 2 * STEPS_PER_SCENE and check.segments == 2
    assert check.max_observation_error == 0.0 and check.first_mismatch is None


def test_tampered_action_is_detected_by_replay(recorded, room) -> None:
    path, _ = recorded
    demo = load_demonstration(path)
    actions = demo.actions.copy()
    actions[5] = -actions[5] if np.abs(actions[5]).max() > 0.05 else np.array([1, 0, 0, 1], np.float32)
    tampered = type(demo)(
        {**demo.frames, "actions": actions}, demo.segment_scenes, demo.segment_seeds, demo.metadata
    )
    check = replay_demonstration(tampered, scenes={room.name: room})
    assert check.first_mismatch is not None and check.first_mismatch > 5


def test_observations_are_published_as_distance_matrices(small_env_settings, room) -> None:
    endpoint = free_tcp_endpoint()
    with (
        Publisher(endpoint) as publisher,
        Subscriber(endpoint, topics=[topics.DISTANCE_MATRIX]) as subscriber,
    ):
        session = ExplorerSession(small_env_settings, [room], publisher=publisher)
        for _ in range(50):  # handshake: keep polling the subscriber while waiting for its notice
            subscriber.recv(10)
            try:
                publisher.wait_for_subscribers(timeout_ms=20)
                break
            except PeerTimeoutError:  # until the subscription notice lands
                continue
        session.next_scene()
        session.step(np.array([1.0, 0.0, 0.0, 0.0], np.float32))
        received = [subscriber.recv(2000) for _ in range(2)]
    messages = [item[1] for item in received if item is not None]
    assert len(messages) == 2 and all(isinstance(m, DistanceMatrix) for m in messages)
    last = messages[-1]
    assert isinstance(last, DistanceMatrix)
    assert last.matrix_shape == (32, 8) and last.step_id == 1
    np.testing.assert_array_equal(last.depth[0], session.observation[0, 0].numpy())
    assert last.poses is not None


def test_recording_is_stored_compressed(recorded, small_env_settings) -> None:
    """Lossless deflate: well under the raw 3 x Az x El float32 per frame, replay still bit-exact."""
    path, session = recorded
    sensor = small_env_settings.sensor
    raw_per_frame = 3 * sensor.azimuth_bins * sensor.elevation_bins * 4
    assert path.stat().st_size / session.total_steps < raw_per_frame / 3
