"""One spelling per metric, whichever convention the producer uses.

The dashboard charts short names (``reward_ema``, ``policy_loss``, ``kl``, ``timing/<stage>``,
``reward/<term>``). The actor's trainer namespaces its keys the CleanRL way (``charts/reward_ema``,
``losses/approx_kl``, ``time/rollout_<stage>``); both spellings land on the same chart.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

_PREFIX_RENAMES = (("charts/", ""), ("losses/", ""), ("time/", "timing/"))
_ALIASES = {"approx_kl": "kl"}


@lru_cache(maxsize=4096)
def canonical_metric_name(name: str) -> str:
    """The dashboard's name for a payload key.

    Args:
        name: a telemetry payload key, e.g. ``losses/approx_kl`` or ``time/update_backward``.

    Returns:
        The canonical key, e.g. ``kl`` or ``timing/update_backward``; unknown keys pass unchanged.
    """
    for prefix, replacement in _PREFIX_RENAMES:
        if name.startswith(prefix):
            name = replacement + name[len(prefix) :]
            break
    return _ALIASES.get(name, name)


def canonical_payload(payload: Mapping[str, float]) -> dict[str, float]:
    """Rename every key of a payload (a later duplicate wins, as in the original order).

    Args:
        payload: metric name -> value.

    Returns:
        A new dict with canonical names.
    """
    return {canonical_metric_name(name): value for name, value in payload.items()}
