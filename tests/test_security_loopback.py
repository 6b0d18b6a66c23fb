"""Nothing listens beyond this machine unless asked (issue 19): every service's default bind is loopback.

The defaults of every settings class are checked, then real services are started with their
default host (on a free port, so parallel tests never collide with a running stack) and the kernel's
table of listening sockets is read, as ``ss -ltn`` does.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from navi_common import Publisher, RepServer, free_tcp_endpoint
from navi_common.transport import endpoints
from navi_contracts import topics

linux_only = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc/net/tcp")


def _free_port() -> int:
    return int(free_tcp_endpoint().rsplit(":", 1)[1])


def _on_port(endpoint: str, port: int) -> str:
    return f"{endpoint.rsplit(':', 1)[0]}:{port}"


def listening_addresses(port: int) -> set[str]:
    """IPv4 addresses with a socket listening on ``port`` (from /proc/net/tcp, like ``ss -ltn``)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, port_hex = local.split(":")
        if state == "0A" and int(port_hex, 16) == port:  # 0A = LISTEN
            found.add(socket.inet_ntoa(bytes.fromhex(address)[::-1]))
    return found


def test_every_default_bind_is_loopback_and_every_client_connects_to_localhost() -> None:
    from navi_actor.config import ActorSettings
    from navi_actor.service.config import ServiceConfig
    from navi_auditor.settings import AuditorSettings
    from navi_dashboard.settings import DashboardSettings
    from navi_environment.server.config import ServerConfig

    server, service, dashboard = ServerConfig(), ServiceConfig(), DashboardSettings()
    binds = {
        "environment PUB": server.pub_endpoint,
        "environment REP": server.rep_endpoint,
        "actor PUB": service.pub_endpoint,
        "training telemetry": ActorSettings().telemetry.endpoint,
        "explorer PUB": AuditorSettings().explore.publish or "",
    }
    for name, endpoint in binds.items():
        assert endpoints.is_local_endpoint(endpoint), f"{name} binds {endpoint}"
        assert endpoints.endpoint_host(endpoint) == "127.0.0.1", name
    assert dashboard.host == "127.0.0.1"
    connects = [server.action_sub, service.sub_endpoint, service.step_endpoint]
    connects += [dashboard.matrix_sub, dashboard.actor_sub]
    assert all(endpoints.endpoint_host(endpoint) == "localhost" for endpoint in connects), connects


def test_endpoint_helpers() -> None:
    assert endpoints.is_local_endpoint("tcp://127.0.0.1:1") and endpoints.is_local_endpoint("tcp://[::1]:1")
    assert endpoints.is_local_endpoint("ipc:///tmp/x") and endpoints.is_local_endpoint("tcp://localhost:5")
    assert not endpoints.is_local_endpoint("tcp://*:5559")
    assert not endpoints.is_local_endpoint("tcp://0.0.0.0:1")
    assert not endpoints.is_local_endpoint("tcp://192.168.1.4:1")
    assert not endpoints.is_local_endpoint("tcp://eth0:1")
    assert endpoints.with_host("tcp://127.0.0.1:5559", "0.0.0.0") == "tcp://0.0.0.0:5559"
    assert endpoints.with_host("ipc:///tmp/x", "0.0.0.0") == "ipc:///tmp/x"


@linux_only
@pytest.mark.slow  # the backend compiles its kernels when first used in a process
def test_a_default_environment_server_listens_on_loopback_only() -> None:
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings
    from navi_environment.runtime.analytic import RoomSpec, room_scene
    from navi_environment.server import serve
    from navi_environment.server.config import ServerConfig

    config = ServerConfig()
    pub_port, rep_port = _free_port(), _free_port()
    settings = EnvironmentSettings(sensor={"azimuth_bins": 8, "elevation_bins": 4})
    backend = SdfDagBackend(settings, 1, scenes=[room_scene(RoomSpec(hi=(4.0, 4.0, 3.0)), 32)])
    stop = threading.Event()
    pub, rep = _on_port(config.pub_endpoint, pub_port), _on_port(config.rep_endpoint, rep_port)
    thread = threading.Thread(target=serve, args=(backend, pub, rep, stop, config), daemon=True)
    thread.start()
    try:
        from navi_common import ReqClient
        from navi_contracts import StepRequest, StepResult

        with ReqClient(topics.connect_endpoint(rep_port), timeout_ms=5000) as client:
            client.request(StepRequest(request_id=1, reset=True, seed=0), expected=StepResult)  # it is up
        assert listening_addresses(pub_port) == {"127.0.0.1"}
        assert listening_addresses(rep_port) == {"127.0.0.1"}
    finally:
        stop.set()
        thread.join(timeout=10)


@linux_only
def test_default_actor_and_telemetry_publishers_listen_on_loopback_only() -> None:
    from navi_actor.config import TelemetryConfig
    from navi_actor.service.config import ServiceConfig
    from navi_actor.telemetry import TrainingTelemetry

    port = _free_port()
    telemetry = TrainingTelemetry(TelemetryConfig(endpoint=_on_port(TelemetryConfig().endpoint, port)))
    try:
        assert telemetry.active and listening_addresses(port) == {"127.0.0.1"}
    finally:
        telemetry.close()
    port = _free_port()
    with Publisher(_on_port(ServiceConfig().pub_endpoint, port)):
        assert listening_addresses(port) == {"127.0.0.1"}


@linux_only
def test_a_default_dashboard_listens_on_loopback_only() -> None:
    from navi_dashboard.runner import run_dashboard
    from navi_dashboard.settings import DashboardSettings

    settings = DashboardSettings(port=0, matrix_sub=free_tcp_endpoint(), actor_sub=free_tcp_endpoint())
    urls: list[str] = []

    async def scenario() -> None:
        stop, ready = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(run_dashboard(settings, lambda url: (urls.append(url), ready.set()), stop))
        await asyncio.wait_for(ready.wait(), 10)
        port = int(urls[0].rstrip("/").rsplit(":", 1)[1])
        assert listening_addresses(port) == {"127.0.0.1"}
        stop.set()
        await asyncio.wait_for(task, 10)

    asyncio.run(scenario())
    assert urls and urls[0].startswith("http://127.0.0.1:")


@linux_only
def test_a_wide_bind_is_logged_with_what_it_exposes() -> None:
    port = _free_port()
    with capture_logs() as logs, RepServer(f"tcp://0.0.0.0:{port}", handler=lambda request: request):
        assert listening_addresses(port) == {"0.0.0.0"}
    exposed = [entry for entry in logs if entry["event"] == "contracts.socket.exposed"]
    assert len(exposed) == 1 and exposed[0]["socket"] == "REP" and "step" in exposed[0]["exposure"]
    assert "--keys" in exposed[0]["guard"]
    with capture_logs() as quiet, Publisher(free_tcp_endpoint()):
        pass
    assert not [entry for entry in quiet if entry["event"] == "contracts.socket.exposed"]
