"""``navi-auditor record``, ``replay`` and ``inspect``: ZeroMQ session capture and playback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import zmq

from navi_auditor.settings import AuditorSettings
from navi_auditor.streams.format import RecordingFormatError, StreamReader
from navi_auditor.streams.recorder import record_stream
from navi_auditor.streams.replayer import replay_stream
from navi_common import PeerTimeoutError, Publisher
from navi_common.cli_options import build_settings, settings_kwargs, settings_options
from navi_common.transport.curve import CurveKeys, KeysError, load_keys
from navi_contracts import artifacts_root

RECORD_FIELDS = ("recording.sub_endpoints", "keys")
"""Settings ``record`` exposes as ``--<field>`` (:mod:`navi_common.cli_options`)."""
REPLAY_FIELDS = ("recording.pub_endpoint", "recording.subscriber_wait_ms", "keys")
"""Settings ``replay`` exposes as ``--<field>``."""


def command_settings(context: click.Context, options: dict[str, Any]) -> AuditorSettings:
    """The settings of a subcommand: its own options over the group's (``--log-level``), passed only
    when given, so ``NAVI_AUDITOR_*`` and ``.env`` still apply to the rest."""
    group = context.parent.params if context.parent is not None else {}
    return build_settings(AuditorSettings, **settings_kwargs({**group, **options}))


def _curve(settings: AuditorSettings, *, server: bool) -> CurveKeys | None:
    """The ``keys`` folder loaded for this command's role; errors as one line."""
    try:
        return load_keys(settings.keys, server=server, client=not server)
    except KeysError as error:
        raise click.ClickException(str(error)) from error


@click.command()
@settings_options(AuditorSettings, RECORD_FIELDS)
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="New recording file.")
@click.option("--topics", "topic_list", multiple=True, help="Topic to record (repeatable) [all].")
@click.option("--duration", type=float, help="Stop after this many seconds [until Ctrl+C].")
@click.option("--max-messages", type=int, help="Stop after this many messages.")
@click.pass_context
def record(
    context: click.Context,
    *,
    out: Path | None,
    topic_list: tuple[str, ...],
    duration: float | None,
    max_messages: int | None,
    **options: Any,
) -> None:
    """Record live ZeroMQ messages (raw bytes, topic, receive time) into an append-only chunked file.

    Chunks are flushed every --chunk-bytes or chunk-seconds (NAVI_AUDITOR_RECORDING__*), so memory
    stays bounded and a crash loses at most the last unflushed chunk.
    """
    settings = command_settings(context, options)
    if out is None:
        from datetime import UTC, datetime

        out = artifacts_root() / "recordings" / f"{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}.navirec"
    if out.exists():
        raise click.ClickException(f"{out} exists; recordings are append-only, pick a new name")
    curve = _curve(settings, server=False)
    endpoints = settings.recording.sub_endpoints
    try:
        stats = record_stream(
            endpoints, out, settings.recording, topics=list(topic_list) or None,
            duration_s=duration, max_messages=max_messages, curve=curve,
        )  # fmt: skip
    except zmq.ZMQError as error:
        raise click.ClickException(f"cannot subscribe to {', '.join(endpoints)}: {error}") from error
    click.echo(f"recorded {stats.messages} messages in {stats.chunks} chunks to {stats.path}")


@click.command()
@click.option("--input", "path", type=click.Path(path_type=Path, exists=True, dir_okay=False), required=True)
@settings_options(AuditorSettings, REPLAY_FIELDS)
@click.option(
    "--speed", type=float, default=1.0, show_default=True, help="Time scale; 0 = as fast as possible."
)
@click.pass_context
def replay(context: click.Context, *, path: Path, speed: float, **options: Any) -> None:
    """Publish a recording in order, with its relative timing divided by --speed."""
    if speed < 0:
        raise click.BadParameter("must be >= 0", param_hint="--speed")
    settings = command_settings(context, options)
    endpoint = settings.recording.pub_endpoint
    wait = settings.recording.subscriber_wait_ms
    curve = _curve(settings, server=True)
    try:
        with Publisher(endpoint, curve=curve) as publisher:
            stats = replay_stream(path, publisher, speed, wait_for_subscribers_ms=wait)
    except (RecordingFormatError, PeerTimeoutError) as error:
        raise click.ClickException(str(error)) from error
    except zmq.ZMQError as error:
        raise click.ClickException(f"cannot bind {endpoint}: {error}") from error
    click.echo(f"replayed {stats.messages} messages in {stats.seconds:.2f} s ({stats.dropped} dropped)")
    if stats.damaged:
        click.echo(
            f"warning: the recording's tail was damaged ({stats.damaged}); replayed up to it", err=True
        )


@click.command()
@click.argument("path", type=click.Path(path_type=Path, exists=True, dir_okay=False))
def inspect(path: Path) -> None:
    """Print a JSON summary of a recording (messages per topic, time span, damage)."""
    try:
        report = StreamReader(path).scan()
    except RecordingFormatError as error:
        raise click.ClickException(str(error)) from error
    span = None if report.first_time is None else (report.last_time or 0.0) - report.first_time
    click.echo(json.dumps({
        "path": str(path), "messages": report.messages, "chunks": report.chunks,
        "topics": dict(report.topics), "seconds": span,
        "closed_cleanly": report.has_index, "damage": report.damage,
        "metadata": report.metadata,
    }))  # fmt: skip
