"""Corpus-side spawn qualification: a thin adapter over the runtime's :mod:`runtime.spawn`.

There is exactly one tracer in Navi; qualification probes spawns with the same one the drones use,
on the same brick map the runtime builds at load (``runtime.loader.scene_from_asset``, which reads
clearance from the refined :func:`navi_environment.gmdag.sample.dense_query` when it fits the scene
budget), so a verdict here is what training will see. Imports are lazy because the runtime's
settings import this package's settings module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from navi_environment.gmdag.format import GmdagAsset

if TYPE_CHECKING:
    from navi_environment.config import EnvironmentSettings

Bounds = tuple[tuple[float, float, float], tuple[float, float, float]]


def qualify_asset(
    asset: GmdagAsset,
    settings: EnvironmentSettings | None = None,
    seed: int = 0,
    source_bounds: Bounds | None = None,
) -> dict[str, Any]:
    """Probe spawn candidates of an asset and summarise the verdict.

    Args:
        asset: a validated asset.
        settings: environment settings (sensor horizon, spawn clearance and thresholds).
        seed: candidate sampling seed.
        source_bounds: min/max corner of the source geometry; when given, the summary also counts
            the viable spawns inside it (``viable_inside``) and adds a ``warning`` when there is
            none: procedural scenes are closed buildings, and a drone spawned on the roof or in
            the padding around them learns nothing about indoor navigation (the corpus builder
            prefers scenes without that warning).

    Returns:
        JSON-friendly summary: verdict (PASS/FAIL), reason, viable spawns, candidates, free
        candidates, best starvation, the median clearance of the viable spawns (metres) and,
        with ``source_bounds``, ``viable_inside``.
    """
    from navi_environment.config import EnvironmentSettings
    from navi_environment.runtime.loader import scene_from_asset
    from navi_environment.runtime.spawn import qualify_scene

    settings = settings or EnvironmentSettings()
    scene = scene_from_asset(asset, settings)
    # The same call, with the same defaults, as the runtime backend makes (one implementation).
    report = qualify_scene(scene, settings, seed=seed)
    summary = dict(report.summary())
    clearance = report.clearance
    summary["median_clearance_m"] = float(np.median(clearance)) if len(clearance) else None
    if source_bounds is not None:
        lo, hi = np.asarray(source_bounds[0]), np.asarray(source_bounds[1])
        inside = ((report.positions > lo) & (report.positions < hi)).all(axis=1)
        summary["viable_inside"] = int(inside.sum())
        if summary["verdict"] == "PASS" and not inside.any():
            summary["warning"] = (
                f"no viable spawn inside the source bounds ({len(report.positions)} outside only)"
            )
    return summary
