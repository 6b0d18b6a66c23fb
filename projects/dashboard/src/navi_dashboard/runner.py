"""Run the dashboard until interrupted: wire state, feeds, pilot and web server together."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable

import structlog

from navi_common.transport.curve import load_keys
from navi_dashboard.control import KeyboardPilot
from navi_dashboard.guard import is_wide
from navi_dashboard.ingest import build_feeds
from navi_dashboard.server import DashboardStartError, control_url, create_app, serve
from navi_dashboard.settings import DashboardSettings
from navi_dashboard.state import DashboardState

__all__ = ["DashboardStartError", "run_dashboard"]

log = structlog.get_logger()


async def run_dashboard(
    settings: DashboardSettings,
    on_ready: Callable[[str], None],
    stop: asyncio.Event | None = None,
) -> None:
    """Serve the dashboard until ``stop`` is set or the process gets SIGINT/SIGTERM.

    Args:
        settings: resolved dashboard settings.
        on_ready: called once with the page URL when the server listens.
        stop: an event that ends the run; a fresh one (set by signals) when None.

    Raises:
        DashboardStartError: the server could not bind ``host:port`` (re-exported here).
    """
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop.set)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread / platform
            break
    state = DashboardState(settings.stream, settings.history)
    pilot = (
        KeyboardPilot(settings.step_endpoint, settings.control, state, curve=load_keys(settings.keys))
        if settings.step_endpoint is not None
        else None
    )
    app = create_app(settings, state, build_feeds(settings, state), pilot)
    if is_wide(settings.host):
        log.warning(
            "dashboard.exposed",
            host=settings.host,
            exposure="other machines can open the page (and fly, with the token URL)",
            hint="reach it by a name given with --allowed-hosts; only localhost names are accepted otherwise",
        )
    async with serve(app, settings.host, settings.port) as url:
        log.info("dashboard.listening", url=url, matrix_sub=settings.matrix_sub, actor_sub=settings.actor_sub)
        on_ready(control_url(app, url))
        await stop.wait()
