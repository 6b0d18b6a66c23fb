"""Secure mode on real sockets (127.0.0.1): only allowlisted CURVE clients step or receive anything.

The environment server runs with ``--keys``-equivalent settings; a client holding the generated
client key steps, one with no key, a foreign key or the wrong server key gets nothing within its
timeout, the server logs the refusal and keeps serving the good client.
"""

from __future__ import annotations

import stat
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import zmq
from click.testing import CliRunner
from structlog.testing import capture_logs

from navi_common import PeerTimeoutError, ReqClient, Subscriber, free_tcp_endpoint
from navi_common.transport.curve import CurveKeys, KeysError, generate_keys, load_keys
from navi_common.transport.keys_cli import main as keys_cli
from navi_contracts import Action, StepRequest, StepResult, topics

REFUSAL_TIMEOUT_MS = 400


@pytest.fixture
def keys(tmp_path: Path) -> CurveKeys:
    generate_keys(tmp_path / "keys")
    return CurveKeys.load(tmp_path / "keys")


@pytest.fixture
def secure_server(keys: CurveKeys) -> Iterator[tuple[str, str]]:
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings
    from navi_environment.runtime.analytic import RoomSpec, room_scene
    from navi_environment.server import serve
    from navi_environment.server.config import ServerConfig

    settings = EnvironmentSettings(sensor={"azimuth_bins": 16, "elevation_bins": 8})
    backend = SdfDagBackend(settings, 1, scenes=[room_scene(RoomSpec(hi=(8.0, 6.0, 3.0)), 64)])
    pub, rep = free_tcp_endpoint(), free_tcp_endpoint()
    stop = threading.Event()
    config = ServerConfig(keys=keys.folder)
    thread = threading.Thread(target=serve, args=(backend, pub, rep, stop, config), daemon=True)
    thread.start()
    yield pub, rep
    stop.set()
    thread.join(timeout=10)
    assert not thread.is_alive()


def _step(request_id: int) -> StepRequest:
    action = Action(
        env_ids=np.zeros(1, dtype=np.int32), actions=np.full((1, 4), 0.3, dtype=np.float32),
        policy_id="test", step_id=request_id, timestamp=0.0,
    )  # fmt: skip
    return StepRequest(request_id=request_id, actions=action)


def test_generate_writes_private_secrets_and_refuses_to_overwrite(tmp_path: Path) -> None:
    folder = tmp_path / "k"
    result = CliRunner().invoke(keys_cli, ["generate", "--dir", str(folder)])
    assert result.exit_code == 0, result.output
    for name in ("server.key_secret", "client.key_secret"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    loaded = CurveKeys.load(folder)
    assert loaded.client_public in loaded.allowed_clients and loaded.server_secret is not None
    again = CliRunner().invoke(keys_cli, ["generate", "--dir", str(folder)])
    assert again.exit_code != 0 and "already exist" in again.output and "Traceback" not in again.output
    assert CurveKeys.load(folder).server_public == loaded.server_public  # untouched


def test_an_incomplete_keys_folder_is_one_clear_error(tmp_path: Path, keys: CurveKeys) -> None:
    with pytest.raises(KeysError, match="does not exist"):
        load_keys(tmp_path / "missing")
    (keys.folder / "client.key_secret").unlink()
    with pytest.raises(KeysError, match=r"client\.key_secret"):
        load_keys(keys.folder, client=True)
    assert load_keys(keys.folder, server=True) is not None  # the binding machine needs no client secret
    assert load_keys(None) is None


@pytest.mark.slow  # the fixture's backend compiles its kernels when first used in a process
def test_only_the_allowlisted_client_steps_and_receives(
    secure_server: tuple[str, str], keys: CurveKeys, tmp_path: Path
) -> None:
    pub, rep = secure_server
    generate_keys(tmp_path / "other")
    other = CurveKeys.load(tmp_path / "other")
    foreign_client = replace(keys, client_public=other.client_public, client_secret=other.client_secret)
    wrong_server = replace(keys, server_public=other.server_public)
    with (
        ReqClient(rep, timeout_ms=5000, retries=1, curve=keys) as good,
        Subscriber(pub, [topics.DISTANCE_MATRIX], curve=keys) as good_view,
        Subscriber(pub, [topics.DISTANCE_MATRIX]) as plain_view,
        Subscriber(pub, [topics.DISTANCE_MATRIX], curve=foreign_client) as foreign_view,
        capture_logs() as logs,
    ):
        assert (
            good.request(StepRequest(request_id=1, reset=True, seed=0), expected=StepResult).request_id == 1
        )
        request_id = 2
        for intruder in (None, foreign_client, wrong_server):
            with (
                ReqClient(rep, timeout_ms=REFUSAL_TIMEOUT_MS, retries=0, curve=intruder) as bad,
                pytest.raises(PeerTimeoutError),
            ):
                bad.request(_step(100), expected=StepResult)
            result = good.request(_step(request_id), expected=StepResult)  # the good client keeps stepping
            assert result.request_id == request_id and result.observation.depth.shape == (1, 16, 8)
            request_id += 1
        received = None
        for _ in range(50):  # PUB/SUB joins asynchronously: step until the good view sees one
            good.request(_step(request_id), expected=StepResult)
            request_id += 1
            received = received or good_view.recv(timeout_ms=50)
            if received is not None:
                break
        assert received is not None and received[0] == topics.DISTANCE_MATRIX
        assert plain_view.recv(timeout_ms=REFUSAL_TIMEOUT_MS) is None
        assert foreign_view.recv(timeout_ms=REFUSAL_TIMEOUT_MS) is None
    refused = [entry for entry in logs if entry["event"] == "contracts.curve.client_refused"]
    assert {entry["client_key"] for entry in refused} == {other.client_public.decode()}  # type: ignore[union-attr]
    failed = [entry for entry in logs if entry["event"] == "contracts.curve.handshake_failed"]
    assert {entry["endpoint"] for entry in failed} >= {rep}  # the keyless and the wrong-server-key client


def test_oversized_requests_are_dropped_and_the_server_keeps_serving() -> None:
    from navi_common.transport.reqrep import RepServer

    endpoint = free_tcp_endpoint()
    limits = _small_limits(4096)
    server = RepServer(endpoint, handler=lambda request: request, limits=limits)
    stop = threading.Event()
    thread = threading.Thread(target=server.serve, args=(stop, 20), daemon=True)
    thread.start()
    raw = zmq.Context.instance().socket(zmq.REQ)
    raw.setsockopt(zmq.LINGER, 0)
    try:
        raw.connect(endpoint)
        raw.send(b"\x00" * 100_000)  # 100 kB against a 4 kB limit: the connection is dropped
        assert not raw.poll(REFUSAL_TIMEOUT_MS, zmq.POLLIN)
        with ReqClient(endpoint, timeout_ms=5000, retries=0) as good:
            reply = good.request(StepRequest(request_id=7, reset=True, seed=1))
        assert reply.request_id == 7  # type: ignore[attr-defined]
    finally:
        raw.close(linger=0)
        stop.set()
        thread.join(timeout=5)
        server.close()
    assert server.served == 1  # the oversized request never reached the handler


def test_an_oversized_publication_is_cut_off_without_harm() -> None:
    """ZeroMQ drops the connection that carried the oversized frame (a protocol error: that
    subscriber stays disconnected from that publisher, docs/security.md); nothing is decoded or
    buffered, and the publisher keeps serving its other subscribers."""
    from navi_common import Publisher
    from navi_contracts import TelemetryEvent

    endpoint = free_tcp_endpoint()
    small = TelemetryEvent(
        event_type="test.small", source="test", step_id=0, payload={"v": 1.0}, timestamp=0.0
    )
    with (
        Publisher(endpoint) as publisher,
        Subscriber(endpoint, latest_only=False, limits=_small_limits(2048)) as strict,
        Subscriber(endpoint, latest_only=False) as normal,
    ):
        publisher.wait_for_subscribers(count=2, timeout_ms=5000)
        publisher.publish_raw(topics.TELEMETRY_EVENT, b"\x01" * 50_000)  # over strict's 2 kB frame limit
        publisher.publish(topics.TELEMETRY_EVENT, small)
        assert (
            normal.recv(timeout_ms=5000) is not None
        )  # the garbage is dropped by the decoder, small arrives
        assert normal.dropped == 1
        assert strict.recv(timeout_ms=REFUSAL_TIMEOUT_MS) is None
        assert strict.dropped == 0  # the oversized frame never reached the decoder
        publisher.publish(topics.TELEMETRY_EVENT, small)
        assert normal.recv(timeout_ms=5000) is not None


def _small_limits(max_bytes: int):  # type: ignore[no-untyped-def]
    from navi_contracts import ContractLimits

    return ContractLimits(max_message_bytes=max_bytes)


def test_secure_telemetry_reaches_the_recorder_and_the_dashboard_only_with_the_key(
    keys: CurveKeys, tmp_path: Path
) -> None:
    from navi_auditor.settings import RecordingSettings
    from navi_auditor.streams import StreamReader, record_stream
    from navi_common import Publisher
    from navi_contracts import TelemetryEvent
    from navi_dashboard.ingest import build_feeds
    from navi_dashboard.settings import DashboardSettings
    from navi_dashboard.state import DashboardState

    endpoint = free_tcp_endpoint()
    event = TelemetryEvent(
        event_type="test.secure", source="test", step_id=1, payload={"v": 2.0}, timestamp=0.0
    )
    settings = RecordingSettings(chunk_bytes=2048, chunk_seconds=0.05, fsync=False, poll_ms=20)
    dashboard = DashboardSettings(matrix_sub=free_tcp_endpoint(), actor_sub=endpoint, keys=keys.folder)
    state = DashboardState(dashboard.stream, dashboard.history)
    feeds = build_feeds(dashboard, state)
    with Publisher(endpoint, curve=keys) as publisher:
        for feed in feeds:
            feed.start(lambda: None)
        try:
            plain = threading.Thread(
                target=record_stream,
                args=([endpoint], tmp_path / "plain.navirec", settings),
                kwargs={"duration_s": 1.5},
            )
            secure = threading.Thread(
                target=record_stream,
                args=([endpoint], tmp_path / "secure.navirec", settings),
                kwargs={"duration_s": 1.5, "curve": keys, "max_messages": 3},
            )
            plain.start()
            secure.start()
            publisher.wait_for_subscribers(
                topics.TELEMETRY_EVENT, count=2, timeout_ms=5000
            )  # secure + dashboard
            for _ in range(3):
                publisher.publish(topics.TELEMETRY_EVENT, event)
            plain.join(timeout=10)
            secure.join(timeout=10)
        finally:
            for feed in feeds:
                feed.stop()
    assert [record.topic for record in StreamReader(tmp_path / "secure.navirec")] == [
        topics.TELEMETRY_EVENT
    ] * 3
    assert list(StreamReader(tmp_path / "plain.navirec")) == []
    assert state.status()["counts"]["telemetry"] == 3
