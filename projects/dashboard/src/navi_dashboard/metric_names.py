"""One spelling per metric, whichever convention the producer uses.

The names and the mapping live in :mod:`navi_contracts.telemetry_names`, the one list producers
publish from; this module applies it to payloads. The dashboard charts short names
(``reward_ema``, ``policy_loss``, ``kl``, ``timing/<stage>``, ``reward/<term>``); the trainer's
CleanRL keys (``charts/reward_ema``, ``losses/approx_kl``, ``time/rollout_<stage>``) land on the
same charts.
"""

from __future__ import annotations

from collections.abc import Mapping

from navi_contracts.telemetry_names import canonical_metric_name

__all__ = ["canonical_metric_name", "canonical_payload"]


def canonical_payload(payload: Mapping[str, float]) -> dict[str, float]:
    """Rename every key of a payload (a later duplicate wins, as in the original order).

    Args:
        payload: metric name -> value.

    Returns:
        A new dict with canonical names.
    """
    return {canonical_metric_name(name): value for name, value in payload.items()}
