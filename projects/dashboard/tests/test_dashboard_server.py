"""The dashboard server against fake producers on real sockets (127.0.0.1, free ports)."""

from __future__ import annotations

import asyncio
import json
import zlib

import aiohttp
import numpy as np
import pytest

from navi_common import Publisher
from navi_contracts import topics
from navi_dashboard.protocol import unpack_frame
from navi_dashboard.synthetic import INFERENCE_EVENT, room_matrix


def _png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def test_status_frame_and_charts_reach_a_tab(kit, producer_factory) -> None:
    settings = kit.settings()

    async def scenario() -> None:
        async with kit.running_dashboard(settings) as (url, state, _app), aiohttp.ClientSession() as http:
            producer_factory(settings.actor_sub, shape=(64, 16))
            async with http.ws_connect(url + "ws") as ws:
                hello = json.loads((await ws.receive(timeout=5)).data)
                assert hello["type"] == "hello" and hello["control"] is False
                status = await kit.receive_until(
                    ws, lambda m: kit.is_status(m, mode="TRAINING") and '"obs_age_ms":null' not in m.data
                )
                frame = await kit.receive_until(ws, lambda m: m.type == aiohttp.WSMsgType.BINARY)
            header, png = unpack_frame(frame.data)
            assert (header["width"], header["height"]) == (64, 16) and header["source"] == "actor"
            assert _png_size(png) == (64, 16)
            body = json.loads(status.data)
            assert body["obs_age_ms"] is not None and 0 <= body["obs_age_ms"] < 2000
            assert body["sps"] == pytest.approx(body["latest"]["sps"]) and body["sps_source"] == "telemetry"
            assert body["active_actors"] == 64 and body["scene"] == "#3"
            assert body["obs_pose"]["position"] == [0.0, 0.0, 1.5] and 0 <= body["obs_pose"]["yaw_deg"] < 360
            assert set(body["reward_terms"]) == {"exploration", "progress", "collision", "existential"}
            assert set(body["timings"]) == {"rollout", "update", "encode"}
            await kit.wait_until(lambda: state.status()["counts"]["telemetry"] >= 3, what="telemetry")
            async with http.get(url + "api/status") as response:
                api = await response.json()
            assert api["mode"] == "TRAINING" and api["clients"] == 0
            async with http.get(url + "api/frame.png") as response:
                assert response.content_type == "image/png"
                assert _png_size(await response.read()) == (64, 16)

    asyncio.run(scenario())


def test_page_and_assets_are_served_from_the_package(kit) -> None:
    async def scenario() -> None:
        async with kit.running_dashboard(kit.settings()) as (url, _s, _a), aiohttp.ClientSession() as http:
            async with http.get(url) as response:
                page = await response.text()
            assert '<canvas id="panorama"' in page and "http" not in page.replace("http-equiv", ""), (
                "the page must not load anything from the network"
            )
            for asset in ("app.js", "charts.js", "style.css"):
                async with http.get(url + "static/" + asset) as response:
                    assert response.status == 200, asset
                    text = await response.text()
                    assert "https://" not in text and "cdn" not in text.lower(), asset
            async with http.get(url + "api/frame.png") as response:
                assert response.status == 404  # nothing received yet

    asyncio.run(scenario())


def test_dashboard_started_first_sees_late_producer_and_survives_its_restart(kit, producer_factory) -> None:
    settings = kit.settings()

    async def scenario() -> None:
        async with kit.running_dashboard(settings) as (_url, state, _app):
            assert state.mode().value == "WAITING"
            with producer_factory(settings.matrix_sub, event_type=None, batch=3, first_step=0):
                await kit.wait_until(lambda: state.mode().value == "OBSERVER", what="observer mode")
                assert state.status()["active_actors"] == 3  # the batch size, without telemetry
            seen = state.status()["counts"]["observations"]
            # A new producer process on the same endpoint, counter restarted from zero.
            with producer_factory(settings.matrix_sub, event_type=INFERENCE_EVENT, batch=3, first_step=0):
                await kit.wait_until(lambda: state.mode().value == "INFERENCE", what="inference mode")
                await kit.wait_until(
                    lambda: state.status()["counts"]["observations"] > seen + 5, what="resume"
                )
                status = state.status()
            assert status["obs_source"] == "environment" and status["active_actors"] == 64  # reported

    asyncio.run(scenario())


def test_mode_falls_back_to_waiting_when_producers_stop(kit, producer_factory) -> None:
    settings = kit.settings(stream={"poll_timeout_ms": 50, "mode_timeout_s": 0.3, "status_hz": 20.0})

    async def scenario() -> None:
        async with kit.running_dashboard(settings) as (_url, state, _app):
            with producer_factory(settings.actor_sub):
                await kit.wait_until(lambda: state.mode().value == "TRAINING", what="training mode")
            await kit.wait_until(lambda: state.mode().value == "WAITING", timeout_s=5, what="waiting mode")

    asyncio.run(scenario())


def test_environment_steps_per_second_is_measured_from_step_ids(kit, producer_factory) -> None:
    settings = kit.settings()

    async def scenario() -> None:
        async with kit.running_dashboard(settings) as (_url, state, _app):
            producer_factory(settings.matrix_sub, event_type=None, batch=4, rate_hz=40.0)
            await kit.wait_until(lambda: state.status()["sps"] is not None, what="an sps estimate")
            await kit.wait_until(
                lambda: state.status()["counts"]["observations"] > 40, what="a second of data"
            )
            status = state.status()
            assert status["sps_source"] == "environment"
            # 40 batch steps/s x 4 drones; the producer paces with waits, so allow for slack on 2 cores.
            assert 60.0 < status["sps"] < 200.0

    asyncio.run(scenario())


def test_undecodable_messages_are_counted_and_the_feed_keeps_going(kit) -> None:
    settings = kit.settings()

    async def scenario() -> None:
        async with kit.running_dashboard(settings) as (_url, state, _app):
            with Publisher(settings.matrix_sub, bind=True) as publisher:
                await asyncio.to_thread(publisher.wait_for_subscribers, topics.DISTANCE_MATRIX, 1, 5000)
                publisher.publish_raw(topics.DISTANCE_MATRIX, b"\x93not msgpack of a model")
                await kit.wait_until(lambda: state.status()["counts"]["errors"] >= 1, what="error count")
                publisher.publish(topics.DISTANCE_MATRIX, room_matrix(1, 32, 8, step_id=5))
                await kit.wait_until(
                    lambda: state.status()["obs_step"] == 5, what="a good frame after a bad one"
                )
            assert "environment" in state.status()["counts"]["last_error"]

    asyncio.run(scenario())


def test_several_tabs_watch_at_once_and_closed_tabs_are_dropped(kit, producer_factory) -> None:
    settings = kit.settings()

    async def scenario() -> None:
        async with kit.running_dashboard(settings) as (url, _state, app), aiohttp.ClientSession() as http:
            from navi_dashboard.server import HUB

            hub = app[HUB]
            producer_factory(settings.actor_sub, shape=(256, 48))
            tabs = [await http.ws_connect(url + "ws") for _ in range(3)]
            for ws in tabs:
                await kit.receive_until(ws, lambda m: m.type == aiohttp.WSMsgType.BINARY)
                await kit.receive_until(ws, lambda m: kit.is_status(m, mode="TRAINING"))
            assert len(hub.clients) == 3
            for ws in tabs:
                await ws.close()
            await kit.wait_until(lambda: len(hub.clients) == 0, what="closed tabs to be dropped")

    asyncio.run(scenario())


def test_bad_page_messages_get_a_notice_and_the_tab_stays_connected(kit) -> None:
    async def scenario() -> None:
        async with (
            kit.running_dashboard(kit.settings()) as (url, _s, _a),
            aiohttp.ClientSession() as http,
            http.ws_connect(url + "ws") as ws,
        ):
            for bad in ("not json", '{"type": "keys", "down": ["x"]}', '{"type": "other"}'):
                await ws.send_str(bad)
                notice = await kit.receive_until(ws, lambda m: '"notice"' in str(m.data))
                assert json.loads(notice.data)["text"]
            await ws.send_str('{"type": "keys", "down": ["w"]}')
            notice = await kit.receive_until(ws, lambda m: '"notice"' in str(m.data))
            assert "--step-endpoint" in json.loads(notice.data)["text"]
            assert await kit.receive_until(ws, kit.is_status)

    asyncio.run(scenario())


def test_frame_bytes_decode_to_the_rendered_panorama(kit) -> None:
    """The PNG a tab receives is exactly the server-side render of the observation."""
    from navi_dashboard.render import render_panorama

    settings = kit.settings()
    matrix = room_matrix(1, 32, 8, step_id=9)

    async def scenario() -> bytes:
        async with kit.running_dashboard(settings) as (url, _s, _a), aiohttp.ClientSession() as http:
            with Publisher(settings.actor_sub, bind=True) as publisher:
                await asyncio.to_thread(publisher.wait_for_subscribers, topics.DISTANCE_MATRIX, 1, 5000)
                async with http.ws_connect(url + "ws") as ws:
                    publisher.publish(topics.DISTANCE_MATRIX, matrix)
                    frame = await kit.receive_until(ws, lambda m: m.type == aiohttp.WSMsgType.BINARY)
        return unpack_frame(frame.data)[1]

    png = asyncio.run(scenario())
    idat = png[png.index(b"IDAT") + 4 : png.index(b"IEND") - 8]
    rows = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(8, 1 + 32 * 3)
    expected = render_panorama(np.asarray(matrix.depth[0]), np.asarray(matrix.valid_mask[0]))
    np.testing.assert_array_equal(rows[:, 1:].reshape(8, 32, 3), expected)


def test_port_in_use_is_a_clear_error(kit) -> None:
    from navi_dashboard.server import DashboardStartError, create_app, serve

    async def scenario() -> None:
        async with kit.running_dashboard(kit.settings()) as (url, _s, _a):
            port = int(url.rsplit(":", 1)[1].strip("/"))
            with pytest.raises(DashboardStartError, match=f"127.0.0.1:{port}.*--port"):
                async with serve(create_app(kit.settings()), "127.0.0.1", port):
                    pass

    asyncio.run(scenario())


def test_websocket_from_another_site_is_refused(kit) -> None:
    async def scenario() -> None:
        async with kit.running_dashboard(kit.settings()) as (url, _s, _a), aiohttp.ClientSession() as http:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await http.ws_connect(url + "ws", origin="http://evil.example")
            assert refused.value.status == 403
            host = url.removeprefix("http://").rstrip("/")
            async with http.ws_connect(url + "ws", origin=f"http://{host}") as ws:
                assert (await ws.receive_json(timeout=5))["type"] == "hello"

    asyncio.run(scenario())
