"""Corpus-side spawn qualification: a thin adapter over the runtime's :mod:`runtime.spawn`.

There is exactly one tracer in Navi; qualification probes spawns with the same one the drones use.
Imports are lazy because the runtime's settings import this package's settings module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from navi_environment.gmdag.format import GmdagAsset

if TYPE_CHECKING:
    from navi_environment.config import EnvironmentSettings


def qualify_asset(
    asset: GmdagAsset, settings: EnvironmentSettings | None = None, seed: int = 0
) -> dict[str, Any]:
    """Probe spawn candidates of an asset and summarise the verdict.

    Args:
        asset: a validated asset.
        settings: environment settings (sensor horizon, spawn clearance and thresholds).
        seed: candidate sampling seed.

    Returns:
        JSON-friendly summary: verdict (PASS/FAIL), reason, viable spawns, candidates, free
        candidates, best starvation, and the median clearance of the viable spawns (metres).
    """
    from navi_environment.runtime.spawn import qualify_scene

    report = qualify_scene(asset, settings, seed=seed)
    summary = dict(report.summary())
    clearance = report.clearance
    summary["median_clearance_m"] = float(np.median(clearance)) if len(clearance) else None
    return summary
