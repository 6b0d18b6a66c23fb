"""Every telemetry name a producer publishes is understood by the dashboard (issue 23, point 6).

The brain published ``actor.service.stats`` with ``steps_per_second`` / ``mean_episode_return``;
the dashboard knew only ``actor.training.*`` / ``actor.inference.*`` and ``sps`` /
``episode_return``: on the service stack it read OBSERVER and its charts stayed empty. Each
producer below is run for real (no hand-written key lists) and its output fed to the dashboard.
"""

from __future__ import annotations

from pathlib import Path

import torch

import navi_dashboard
from navi_actor.algorithms.update_metrics import METRIC_NAMES, UpdateResult
from navi_actor.inference.telemetry import ActingTelemetry
from navi_actor.runners.progress import TrainingCounters, update_record
from navi_actor.runners.rollout_collector import RolloutStats
from navi_common import Publisher, Subscriber, free_tcp_endpoint
from navi_contracts import TelemetryEvent, topics
from navi_contracts import telemetry_names as names
from navi_dashboard.ingest import sample_from_event
from navi_dashboard.server import hello_message
from navi_dashboard.settings import DashboardSettings, HistorySettings, StreamSettings
from navi_dashboard.state import DashboardState, Mode


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _acting_events(source: str) -> list[TelemetryEvent]:
    """What ActingTelemetry (``navi-actor infer`` and the brain) really publishes, off a socket."""
    endpoint = free_tcp_endpoint()
    clock = Clock()
    with Publisher(endpoint) as publisher, Subscriber(endpoint, [topics.TELEMETRY_EVENT]) as subscriber:
        publisher.wait_for_subscribers(topics.TELEMETRY_EVENT, count=1, timeout_ms=10_000)
        telemetry = ActingTelemetry(publisher, source, clock=clock)
        for _ in range(5):
            telemetry.record_step(
                0.002, torch.tensor([True, False]), torch.tensor([3.0, 0.0]), torch.tensor([40, 7])
            )
        for counter in ("link_failures", "resyncs", "resent_actions"):
            telemetry.count(counter)
        clock.now += 1.0
        telemetry.publish_stats(5)
        telemetry.event(names.RESYNCED, 5, {"seed": 1.0})
        events = []
        while len(events) < 2:
            received = subscriber.recv(timeout_ms=10_000)
            assert received is not None, "no telemetry arrived"
            events.append(received[1])
    assert all(isinstance(event, TelemetryEvent) for event in events)
    return events  # type: ignore[return-value]


def test_the_brain_stats_put_the_dashboard_in_inference_mode_and_fill_its_charts() -> None:
    clock = Clock()
    state = DashboardState(StreamSettings(), HistorySettings(), clock=clock)
    for event in _acting_events(names.SERVICE_SOURCE):
        assert event.event_type.startswith("actor.service.")
        state.add_telemetry(sample_from_event(event, clock.now))
        assert all(names.understood(key) for key in event.payload if key != "seed"), event.payload
    assert state.mode() is Mode.INFERENCE
    status = state.status()
    assert status["sps"] == 5.0 and status["sps_source"] == "telemetry"
    charts, _ = state.chart_delta(-1)
    acting = (names.SPS, names.EPISODE_RETURN, names.EPISODE_LENGTH, names.LATENCY_P50_MS)
    for charted in acting:
        assert charts[charted]["v"], f"{charted} has no chart points"
    assert charts[names.EPISODE_RETURN]["v"] == [3.0] and charts[names.EPISODE_LENGTH]["v"] == [40.0]


def test_infer_stats_are_understood_too() -> None:
    stats = _acting_events(names.INFERENCE_SOURCE)[0]
    assert stats.event_type == "actor.inference.stats"
    assert all(names.understood(key) for key in stats.payload)


def test_every_trainer_update_key_is_understood() -> None:
    stats = RolloutStats(
        env_steps=64, finished_returns=[1.0], finished_shaped_returns=[1.5], finished_lengths=[10.0],
        finished_coverage=[0.2], collision_rate=0.01, mean_speed=1.0,
        reward_terms={"env/progress": 0.1, "shaping/curiosity": 0.01}, timings={"env": 0.5, "policy": 0.1},
        num_actors=4, scene_of_actor0=0.0,
    )  # fmt: skip
    result = UpdateResult(
        metrics=dict.fromkeys(METRIC_NAMES, 0.1), timings={"forward": 0.2, "backward": 0.3}, epochs_run=2,
        early_stopped=False, learning_rate=3e-4,
    )  # fmt: skip
    record = update_record(TrainingCounters(), stats, result, steps_per_second=100.0)
    assert [key for key in record if not names.understood(key)] == []
    canonical = {names.canonical_metric_name(key) for key in record}
    charted = {name for name in canonical if names.charted(name)}
    assert {names.SPS, names.REWARD_EMA, names.POLICY_LOSS, names.KL, "timing/update_forward"} <= charted


def test_the_page_builds_its_charts_from_the_shared_list() -> None:
    hello = hello_message(DashboardSettings(), control=False)
    assert hello["charts"] == [[title, list(series)] for title, series in names.CHARTS]
    page = (Path(navi_dashboard.__file__).parent / "static" / "app.js").read_text(encoding="utf-8")
    assert "buildCharts(message.charts" in page  # the page has no chart list of its own
    assert all(series and all(isinstance(name, str) for name in series) for _, series in names.CHARTS)


def test_environment_step_telemetry_is_understood() -> None:
    from navi_contracts.samples import sample_action
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings
    from navi_environment.runtime.analytic import RoomSpec, room_scene
    from navi_environment.server import EnvironmentService

    settings = EnvironmentSettings(sensor={"azimuth_bins": 16, "elevation_bins": 8})  # type: ignore[arg-type]
    backend = SdfDagBackend(settings, 2, scenes=[room_scene(RoomSpec(hi=(8.0, 6.0, 3.0)), 32)])
    endpoint = free_tcp_endpoint()
    with Publisher(endpoint) as publisher, Subscriber(endpoint, [topics.TELEMETRY_EVENT]) as subscriber:
        publisher.wait_for_subscribers(topics.TELEMETRY_EVENT, count=1, timeout_ms=10_000)
        service = EnvironmentService(backend, publisher)
        service.reset(0)
        service.step(sample_action(batch=2).model_copy(update={"step_id": service.step_id}))
        events = [subscriber.recv(timeout_ms=10_000) for _ in range(2)]  # the reset's, then the step's
    assert all(received is not None and isinstance(received[1], TelemetryEvent) for received in events)
    event = events[1][1]  # type: ignore[index]
    assert event.event_type == names.ENVIRONMENT_STEP
    assert [key for key in event.payload if not names.understood(key)] == []
    assert {names.COLLISION_RATE, names.SPEED} <= set(event.payload)  # their charts fill on the stack


def test_a_finished_episode_reports_its_return_and_length_not_the_next_ones() -> None:
    """The service read the backend's counters after its auto-reset: every episode looked 0 long."""
    from navi_contracts.samples import sample_action
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings
    from navi_environment.runtime.analytic import RoomSpec, room_scene
    from navi_environment.server import EnvironmentService

    settings = EnvironmentSettings(
        sensor={"azimuth_bins": 16, "elevation_bins": 8},
        episode={"max_steps": 3},  # type: ignore[arg-type]
    )
    backend = SdfDagBackend(settings, 2, scenes=[room_scene(RoomSpec(hi=(8.0, 6.0, 3.0)), 32)])
    service = EnvironmentService(backend, None)
    service.reset(0)
    for _ in range(3):
        result = service.step(sample_action(batch=2).model_copy(update={"step_id": service.step_id}))
    assert result.truncated.all()
    assert result.episode_length.tolist() == [3, 3]
    assert (result.episode_return != 0.0).all()


def test_realtime_environment_stats_are_understood_and_fill_the_realtime_charts() -> None:
    from navi_common import RepServer
    from navi_contracts import Action, StepRequest
    from navi_environment.backend import SdfDagBackend
    from navi_environment.config import EnvironmentSettings
    from navi_environment.runtime.analytic import RoomSpec, room_scene
    from navi_environment.server import EnvironmentService, ServerConfig
    from navi_environment.server.realtime_loop import RealtimeLoop

    settings = EnvironmentSettings(sensor={"azimuth_bins": 16, "elevation_bins": 8})  # type: ignore[arg-type]
    backend = SdfDagBackend(settings, 2, scenes=[room_scene(RoomSpec(hi=(8.0, 6.0, 3.0)), 32)])
    env_pub, brain_pub, rep = free_tcp_endpoint(), free_tcp_endpoint(), free_tcp_endpoint()
    config = ServerConfig(mode="realtime", action_sub=brain_pub)
    with (
        Publisher(env_pub) as publisher,
        Subscriber(env_pub, [topics.TELEMETRY_EVENT]) as subscriber,
        Subscriber(brain_pub, [topics.ACTION]) as actions,
    ):
        publisher.wait_for_subscribers(topics.TELEMETRY_EVENT, count=1, timeout_ms=10_000)
        service = EnvironmentService(backend, publisher, step_requests=False)
        with RepServer(rep, service.handle, accepts=(StepRequest,)) as server:
            loop = RealtimeLoop(service, actions, server, config)
            service.reset(0)
            tick = service.step_id + 1
            chunk = torch.zeros((2, 3, 4)).numpy()
            loop.scheduler.receive(
                Action(env_ids=[0, 1], actions=chunk[:, 0], policy_id="p", step_id=tick - 1, timestamp=0.0,
                       start_tick=tick, chunk=chunk),
                tick,
            )  # fmt: skip
            for _ in range(4):  # three chunk rows, then one fallback tick
                loop.run_tick()
            loop.publish_stats()
        stats = None
        for _ in range(20):
            received = subscriber.recv(timeout_ms=10_000)
            assert received is not None, "no realtime stats arrived"
            if received[1].event_type == names.ENVIRONMENT_REALTIME_STATS:  # type: ignore[attr-defined]
                stats = received[1]
                break
    assert isinstance(stats, TelemetryEvent)
    assert [key for key in stats.payload if not names.understood(key)] == []
    assert stats.payload[names.FALLBACK_TICKS] == 2.0  # one fallback tick for each of the 2 drones
    assert stats.payload[names.MEAN_ACTION_AGE_TICKS] == 2.5  # ages 1, 2, 3, 4
    clock = Clock()
    state = DashboardState(StreamSettings(), HistorySettings(), clock=clock)
    state.add_telemetry(sample_from_event(stats, clock.now))
    realtime = state.status()["realtime"]
    assert isinstance(realtime, dict) and realtime[names.MAX_ACTION_AGE_TICKS] == 4.0
    charts, _ = state.chart_delta(-1)
    for name in (
        names.MEAN_ACTION_AGE_TICKS,
        names.MAX_ACTION_AGE_TICKS,
        names.MISSED_TICKS,
        names.FALLBACK_TICKS,
    ):
        assert names.charted(name) and charts[name]["v"], name


def test_the_realtime_brain_counters_are_understood_and_charted() -> None:
    """``navi-actor serve --inference realtime`` adds its control-loop counters to every stats event."""
    import multiprocessing

    from navi_actor.service.realtime_loop import RealtimeLoop
    from navi_actor.service.realtime_shared import SharedLayout, SharedState

    loop = RealtimeLoop.__new__(RealtimeLoop)  # counters only: no sockets, no processes
    loop.periods = loop.missed_periods = loop.exhausted_periods = loop.published = loop.observations = 0
    condition = multiprocessing.get_context("spawn").Condition()
    loop.shared = SharedState(SharedLayout(drones=1, azimuth=4, elevation=2), condition)
    try:
        counters = loop.counters()
    finally:
        loop.shared.close()
    assert {"missed_periods", "delay_ticks", "inferences"} <= set(counters)
    assert [key for key in counters if not names.understood(key)] == []
    assert names.charted(names.MISSED_PERIODS) and names.charted(names.DELAY_TICKS)
    assert names.understood("losses/chunk_loss")
    assert names.understood("losses/symmetry_loss")
