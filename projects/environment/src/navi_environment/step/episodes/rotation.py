"""The scene rotation: the order in which a drone flies the corpus scenes during training.

Why weights per family: a family that is scarce in a corpus gets few of the training episodes.
(On the default corpus twice the apartments lifted the mean action on two seeds of three, but not
the held-out apartment reliably: docs/experiments/2026-12-family-weights.md; not a default.)
Before this setting the only way to give a family more episodes was copying its files into the
corpus folder. A weight repeats each *run* of consecutive scenes of a family (a manifest lists a
family's scenes together), so the rotation of the default corpus with ``{"apartment": 2}`` is the
one those copies made: the three training apartments, the same three again, then the mazes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def scene_rotation(families: Sequence[str], weights: Mapping[str, int]) -> list[int]:
    """Corpus indices in the order a drone flies them, wrapping at the end.

    Args:
        families: the family of every corpus scene, in corpus order.
        weights: times each family comes round (missing families: once; every weight >= 1).

    Returns:
        Every index of ``families``; each run of consecutive scenes of one family repeated its
        family's weight times. No weights: ``0, 1, ..., N-1``.
    """
    order: list[int] = []
    start = 0
    for index in range(1, len(families) + 1):
        if index == len(families) or families[index] != families[start]:
            weight = int(weights.get(families[start], 1))
            if weight < 1:
                raise ValueError(f"family weight of {families[start]!r} must be >= 1, got {weight}")
            order.extend(list(range(start, index)) * weight)
            start = index
    return order


def unknown_families(families: Sequence[str], weights: Mapping[str, int]) -> list[str]:
    """Weighted families that no scene has (a typo, or a corpus without that family), sorted."""
    return sorted(set(weights) - set(families))
