"""A training run's folder: ``artifacts/runs/<run_id>/{manifest.json, metrics.jsonl, checkpoints/, logs/}``.

The manifest records what produced the run (resolved settings, package versions, git revision) so
every checkpoint and metric line can be traced back to code and configuration; ``logs/events.jsonl``
keeps every log event of the run (warnings, checkpoints, promotions, interruptions) next to them.
"""

from __future__ import annotations

import json
import math
import platform
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from navi_common.atomic import atomic_write_json
from navi_common.logging import log_to_file
from navi_common.provenance import git_revision, package_versions

if TYPE_CHECKING:
    from navi_actor.metrics_loggers import LoggerKind, MetricsLogger

FINISHED_MARKER = "finished.json"
_PACKAGES = ("navi-actor", "navi-contracts", "navi-common", "navi-environment", "torch", "numpy", "pydantic")


def new_run_id(label: str) -> str:
    """``YYYYmmdd-HHMMSS-<label>-<4 hex>``: sortable by time, unique across parallel starts."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{label}-{secrets.token_hex(2)}"


class RunFolder:
    """Creates and writes one run's folder.

    Args:
        runs_root: ``artifacts/runs``.
        run_id: folder name.
    """

    def __init__(self, runs_root: Path, run_id: str) -> None:
        self.run_id = run_id
        self.path = runs_root / run_id
        self.checkpoints = self.path / "checkpoints"
        self.metrics_path = self.path / "metrics.jsonl"
        self.logs = self.path / "logs"
        self.checkpoints.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        self._mirror: MetricsLogger | None = None

    @contextmanager
    def capturing_logs(self) -> Iterator[Path]:
        """Copy every log event emitted inside the block to ``logs/events.jsonl`` (JSON lines)."""
        with log_to_file(self.logs / "events.jsonl") as path:
            yield path

    @contextmanager
    def mirroring_metrics(self, kind: LoggerKind, config: dict[str, Any]) -> Iterator[None]:
        """Inside the block, every metrics line also goes to TensorBoard / W&B (``train.logger``)."""
        from navi_actor.metrics_loggers import open_metrics_logger

        self._mirror = open_metrics_logger(kind, self.path, self.run_id, config)
        try:
            yield
        finally:
            if self._mirror is not None:
                self._mirror.close()
            self._mirror = None

    def write_manifest(self, settings: dict[str, Any], extra: dict[str, Any]) -> Path:
        """Record the resolved settings, versions, git revision and ``extra`` facts (device, resume...)."""
        manifest = {
            "run_id": self.run_id,
            "created_at": datetime.now(UTC).isoformat(),
            "settings": settings,
            "versions": package_versions(_PACKAGES),
            "git_revision": git_revision(),
            "python": platform.python_version(),
            "host": platform.node(),
            **extra,
        }
        path = self.path / "manifest.json"
        atomic_write_json(path, manifest)
        return path

    def mark_finished(self, step_id: int, *, interrupted: bool = False) -> None:
        """Record that the run ended with its final checkpoint: its budget spent, or interrupted.

        A run folder without this marker was killed (``kill -9``, power loss); one stopped by Ctrl+C
        or SIGTERM is ``interrupted``. Auto-resume continues either from its newest valid checkpoint
        rather than from an older promoted model; a run that spent its budget is left to the registry.
        """
        marker = {"step_id": step_id, "interrupted": interrupted, "at": datetime.now(UTC).isoformat()}
        atomic_write_json(self.path / FINISHED_MARKER, marker)

    def unfinished(self) -> bool:
        """Killed (no marker), or stopped by Ctrl+C / SIGTERM before its budget was spent."""
        try:
            marker = json.loads((self.path / FINISHED_MARKER).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return True
        except (OSError, ValueError):
            return False
        return bool(marker.get("interrupted", False))

    def append_metrics(self, record: dict[str, Any]) -> None:
        """Append one strict-JSON line (NaN/inf become null; one short append is atomic enough for a log)."""
        clean = {
            key: None if isinstance(value, float) and not math.isfinite(value) else value
            for key, value in record.items()
        }
        with self.metrics_path.open("a", encoding="utf-8") as stream:
            stream.write(json.dumps(clean, sort_keys=True, allow_nan=False) + "\n")
        if self._mirror is not None:
            self._mirror.log(record)
