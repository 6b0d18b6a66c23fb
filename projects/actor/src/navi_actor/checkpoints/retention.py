"""Per-run checkpoint files: stable names and keeping the last N."""

from __future__ import annotations

from pathlib import Path

import structlog

log = structlog.get_logger()

_PATTERN = "step_*.pt"


def checkpoint_path(folder: Path, step_id: int) -> Path:
    """``<folder>/step_<step_id:012d>.pt`` (zero padded so names sort by step)."""
    return folder / f"step_{step_id:012d}.pt"


def prune_checkpoints(folder: Path, keep: int) -> list[Path]:
    """Delete all but the ``keep`` newest step checkpoints in ``folder``.

    Args:
        folder: a run's checkpoint folder.
        keep: how many to keep (>= 1).

    Returns:
        The deleted paths.
    """
    existing = sorted(folder.glob(_PATTERN))
    doomed = existing[: max(0, len(existing) - keep)]
    for path in doomed:
        path.unlink(missing_ok=True)
        log.debug("actor.checkpoint.pruned", path=str(path))
    return doomed
