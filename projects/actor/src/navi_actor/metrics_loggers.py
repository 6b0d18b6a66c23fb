"""Training curves in TensorBoard or Weights & Biases, with the names of ``metrics.jsonl``.

``navi-actor train --logger tensorboard|wandb`` mirrors every line the run folder appends to
``metrics.jsonl`` (``charts/``, ``losses/``, ``reward/``, ``time/``...) as scalars at the line's
``charts/step_id``, written by the libraries themselves: TensorBoard's ``SummaryWriter``
(``torch.utils.tensorboard``, which needs the ``tensorboard`` package: ``navi-actor[tensorboard]``)
into ``<run>/tensorboard/``, and ``wandb`` (``navi-actor[wandb]``) into ``<run>/wandb/``. W&B runs
offline unless you are logged in (``WANDB_API_KEY`` or a ``~/.netrc`` entry) or chose ``WANDB_MODE``,
and falls back to offline when an online start fails (server unreachable within 30 s, key refused);
offline runs are synced later with ``wandb sync``. Neither library is imported unless chosen.

Non-finite values (no episode finished this update; ``null`` in ``metrics.jsonl``) are left out, so a
live curve and one exported afterwards (:func:`export_tensorboard`) hold the same points.
"""

from __future__ import annotations

import json
import math
import netrc
import os
from pathlib import Path
from typing import Any, Literal, Protocol

import structlog

LoggerKind = Literal["none", "tensorboard", "wandb"]
STEP_KEY = "charts/step_id"
TENSORBOARD_DIR = "tensorboard"
EXPORT_DIR = "tensorboard-export"
WANDB_HOST = "api.wandb.ai"
ONLINE_INIT_TIMEOUT_S = 30.0
"""How long an online ``wandb.init`` may wait on the server before the run logs offline instead."""

log = structlog.get_logger()


class MetricsLoggerUnavailableError(ValueError):
    """The chosen logger's library is not installed (the message names the extra to install).

    A ValueError, like the trainer's other bad-settings errors, so the CLI prints it as one line.
    """


class MetricsLogger(Protocol):
    """Receives each metrics line as it is written."""

    def log(self, record: dict[str, Any]) -> None:
        """Write one update's scalars."""

    def close(self) -> None:
        """Flush and release files or processes."""


def scalars(record: dict[str, Any]) -> dict[str, float]:
    """The finite numeric values of one metrics line (booleans and text left out)."""
    return {
        key: float(value)
        for key, value in record.items()
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    }


class _StepCounter:
    """``charts/step_id`` of a line, or the line's number for records without one (BC pretraining)."""

    def __init__(self) -> None:
        self.lines = 0

    def step(self, record: dict[str, Any]) -> int:
        self.lines += 1
        value = record.get(STEP_KEY)
        return int(value) if isinstance(value, int | float) and math.isfinite(value) else self.lines


class TensorBoardLogger:
    """Scalars through ``torch.utils.tensorboard.SummaryWriter`` into ``folder``."""

    def __init__(self, folder: Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as error:
            raise MetricsLoggerUnavailableError(
                "--logger tensorboard needs the tensorboard package: install navi-actor[tensorboard] "
                "(uv sync --extra tensorboard, or pip install tensorboard)"
            ) from error
        self.folder = folder
        self._writer = SummaryWriter(log_dir=str(folder))
        self._steps = _StepCounter()

    def log(self, record: dict[str, Any]) -> None:
        step = self._steps.step(record)
        for tag, value in scalars(record).items():
            self._writer.add_scalar(tag, value, global_step=step)

    def close(self) -> None:
        self._writer.close()


def wandb_mode() -> str:
    """``WANDB_MODE`` when set; else online when logged in (``WANDB_API_KEY``, or ``api.wandb.ai`` in
    the netrc file that ``wandb login`` writes: ``$NETRC`` or ``~/.netrc``), else offline.

    Decided without any network call, so a machine without W&B access never waits on a login.
    """
    chosen = os.environ.get("WANDB_MODE")
    if chosen:
        return chosen
    if os.environ.get("WANDB_API_KEY"):
        return "online"
    try:
        logged_in = netrc.netrc(os.environ.get("NETRC")).authenticators(WANDB_HOST) is not None
    except (OSError, netrc.NetrcParseError):
        logged_in = False
    return "online" if logged_in else "offline"


class WandbLogger:
    """Scalars through ``wandb.log`` in a run named after the Navi run (offline unless logged in)."""

    def __init__(self, folder: Path, run_id: str, config: dict[str, Any]) -> None:
        try:
            import wandb
        except ImportError as error:
            raise MetricsLoggerUnavailableError(
                "--logger wandb needs the wandb package: install navi-actor[wandb] "
                "(uv sync --extra wandb, or pip install wandb)"
            ) from error
        folder.mkdir(parents=True, exist_ok=True)
        self.mode = wandb_mode()

        def start(mode: str) -> Any:
            return wandb.init(
                project=os.environ.get("WANDB_PROJECT", "navi"),
                name=run_id,
                dir=str(folder),
                config=config,
                mode=mode,  # type: ignore[arg-type]
                settings=wandb.Settings(silent=True, console="off", init_timeout=ONLINE_INIT_TIMEOUT_S),
            )

        try:
            self._run = start(self.mode)
        except Exception as error:  # W&B unreachable or the key refused: keep training, log offline
            if self.mode != "online":
                raise
            log.warning("actor.wandb.offline_fallback", reason=str(error))
            self.mode = "offline"
            self._run = start(self.mode)
        self._steps = _StepCounter()

    def log(self, record: dict[str, Any]) -> None:
        self._run.log(scalars(record), step=self._steps.step(record))

    def close(self) -> None:
        import wandb

        self._run.finish()
        # finish() can return before W&B's service process has written the last rows; teardown waits
        # for it (atexit would too, but not within a process that goes on, or under multiprocessing).
        wandb.teardown()


def open_metrics_logger(
    kind: LoggerKind, run_dir: Path, run_id: str, config: dict[str, Any]
) -> MetricsLogger | None:
    """The logger ``kind`` names for one run folder, or None for ``none``.

    Raises:
        MetricsLoggerUnavailableError: the library is not installed.
    """
    if kind == "tensorboard":
        return TensorBoardLogger(run_dir / TENSORBOARD_DIR)
    if kind == "wandb":
        return WandbLogger(run_dir, run_id, config)
    return None


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The lines of a ``metrics.jsonl`` (a torn last line of a killed run is skipped).

    Raises:
        FileNotFoundError: no such file.
        ValueError: a line before the last one is not JSON.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            if number == len(lines):
                break
            raise ValueError(f"{path}:{number} is not a JSON line: {error}") from error
    return records


def export_tensorboard(run_dir: Path, out: Path | None = None) -> tuple[Path, int]:
    """Write a finished run's ``metrics.jsonl`` as TensorBoard scalars.

    Args:
        run_dir: the run folder (holding ``metrics.jsonl``).
        out: event folder (default ``<run>/tensorboard-export``); must not hold event files yet, so
            exporting twice never doubles a curve.

    Returns:
        The event folder and the number of metrics lines written.

    Raises:
        FileNotFoundError: no ``metrics.jsonl`` in ``run_dir``.
        FileExistsError: ``out`` already holds event files.
        MetricsLoggerUnavailableError: tensorboard is not installed.
    """
    metrics = run_dir / "metrics.jsonl"
    if not metrics.is_file():
        raise FileNotFoundError(f"{run_dir} holds no metrics.jsonl (is it a run folder?)")
    target = out if out is not None else run_dir / EXPORT_DIR
    if any(target.glob("events.out.tfevents.*")):
        raise FileExistsError(f"{target} already holds TensorBoard event files; remove it or pass --out")
    records = read_metrics(metrics)
    logger = TensorBoardLogger(target)
    try:
        for record in records:
            logger.log(record)
    finally:
        logger.close()
    return target, len(records)
