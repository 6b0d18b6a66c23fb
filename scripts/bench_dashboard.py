"""Benchmark: what watching costs. Prints ONE JSON line.

Measures, in one run on this machine:
  * render_ms_p50 / png_bytes: panorama render + PNG encode of one 256x48 observation (per frame,
    shared by every tab);
  * producer throughput publishing DistanceMatrix batches as fast as it can: alone (no subscriber:
    ZeroMQ drops for free), watched by the cheapest possible subscriber (a latest-only drain that
    decodes nothing, the reference for "any watcher at all"), and watched by a ``navi-dashboard``
    process with one live tab and one frozen tab. ``watched_over_null_subscriber`` near 1.0 means
    the dashboard costs the producer no more than any subscriber must; on a 2-core box its CPU use
    shows up here, since it shares the cores;
  * frames per second the live tab received and the observation age it was told;
  * the dashboard's resident memory at the start and the end of the watched phase (the stalled tab
    must not make it grow).

Usage: ``uv run python scripts/bench_dashboard.py [--seconds 3] [--batch 4]``
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import numpy as np

from navi_common import Publisher, configure_logging, free_tcp_endpoint
from navi_contracts import encode, topics
from navi_dashboard.png import encode_png
from navi_dashboard.render import render_panorama
from navi_dashboard.synthetic import room_matrix


def bench_render(repeats: int = 200) -> dict[str, float]:
    """Median render + encode time of the default 256x48 panorama."""
    matrix = room_matrix(1, 256, 48, step_id=1)
    depth, valid = np.asarray(matrix.depth[0]), np.asarray(matrix.valid_mask[0])
    timings, png = [], b""
    for _ in range(repeats):
        started = time.perf_counter()
        png = encode_png(render_panorama(depth, valid))
        timings.append(time.perf_counter() - started)
    return {"render_ms_p50": round(statistics.median(timings) * 1000, 3), "png_bytes": len(png)}


def publish_for(endpoint: str, payload: bytes, seconds: float) -> float:
    """Publish ``payload`` as fast as possible for ``seconds``; returns messages per second."""
    with Publisher(endpoint, bind=True) as publisher:
        count, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            for _ in range(50):
                publisher.publish_raw(topics.DISTANCE_MATRIX, payload)
            count += 50
        return count / (time.perf_counter() - started)


def rss_mb(pid: int) -> float:
    """Resident memory of a process (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def stalled_tab(url: str) -> socket.socket:
    """Open a websocket at the TCP level and never read from it (a frozen browser tab)."""
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    return sock


async def live_tab(url: str, seconds: float) -> dict[str, float]:
    """Count frames and collect reported observation ages for ``seconds``."""
    frames, ages = 0, []
    deadline = time.monotonic() + seconds
    async with aiohttp.ClientSession() as http, http.ws_connect(url + "ws") as ws:
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = await ws.receive(timeout=left)
            except TimeoutError:
                break
            if message.type == aiohttp.WSMsgType.BINARY:
                frames += 1
            elif message.type == aiohttp.WSMsgType.TEXT:
                body = json.loads(message.data)
                if body.get("type") == "status" and body.get("obs_age_ms") is not None:
                    ages.append(body["obs_age_ms"])
            else:
                break
    return {
        "tab_frames_per_s": round(frames / seconds, 1),
        "obs_age_ms_p50": round(statistics.median(ages), 1) if ages else float("nan"),
    }


NULL_WATCHER = """
import sys
from navi_common import Subscriber
from navi_contracts import topics
with Subscriber(sys.argv[1], topics=[topics.DISTANCE_MATRIX], latest_only=True) as sub:
    print("ready", flush=True)
    while True:
        sub.recv_raw(100)
"""


def null_watcher(matrix_endpoint: str) -> subprocess.Popen[str]:
    """The cheapest possible watcher: a latest-only subscriber that drains and discards."""
    process = subprocess.Popen(
        [sys.executable, "-c", NULL_WATCHER, matrix_endpoint], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def start_dashboard(matrix_endpoint: str) -> tuple[subprocess.Popen[str], str]:
    """Start ``navi-dashboard`` on a free port and return it with its URL (read from stdout)."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "navi_dashboard",
            "--matrix-sub",
            matrix_endpoint,
            "--actor-sub",
            free_tcp_endpoint(),
            "--port",
            "0",
            "--log-level",
            "warning",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # "Navi dashboard: http://127.0.0.1:PORT/"
    if "http://" not in line:
        process.kill()
        raise RuntimeError(f"dashboard did not start: {line!r}")
    return process, line.split()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each producer phase")
    parser.add_argument("--batch", type=int, default=4, help="drones per DistanceMatrix")
    args = parser.parse_args()
    configure_logging("warning")  # logs to stderr: stdout carries only the JSON line
    result: dict[str, object] = {"bench": "dashboard", "batch": args.batch, "shape": [256, 48]}
    result.update(bench_render())
    payload = encode(room_matrix(args.batch, 256, 48, step_id=1))
    result["message_bytes"] = len(payload)
    endpoint = free_tcp_endpoint()
    alone = publish_for(endpoint, payload, args.seconds)
    reference = null_watcher(endpoint)
    try:
        null_watched = publish_for(endpoint, payload, args.seconds)
    finally:
        reference.terminate()
        reference.wait(10)
    process, url = start_dashboard(endpoint)
    try:
        frozen = stalled_tab(url)
        result["dashboard_rss_mb_start"] = round(rss_mb(process.pid), 1)

        async def watched() -> tuple[float, dict[str, float]]:
            tab = asyncio.create_task(live_tab(url, args.seconds))
            rate = await asyncio.to_thread(publish_for, endpoint, payload, args.seconds)
            return rate, await tab

        watched_rate, tab_stats = asyncio.run(watched())
        result["dashboard_rss_mb_end"] = round(rss_mb(process.pid), 1)
        frozen.close()
    finally:
        process.terminate()
        process.wait(10)
    result.update(tab_stats)
    result["producer_msgs_per_s_alone"] = round(alone, 1)
    result["producer_msgs_per_s_watched"] = round(watched_rate, 1)
    result["producer_msgs_per_s_null_subscriber"] = round(null_watched, 1)
    result["watched_over_alone"] = round(watched_rate / alone, 3)
    result["watched_over_null_subscriber"] = round(watched_rate / null_watched, 3)
    result["cpu_count"] = os.cpu_count()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
