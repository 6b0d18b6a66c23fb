"""The procedural scene families and the ``procedural:<family>[:seed=<n>]`` source syntax."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from navi_environment.scenes.apartment import generate_apartment
from navi_environment.scenes.building import generate_building
from navi_environment.scenes.hall import generate_hall
from navi_environment.scenes.layout import SceneLayout
from navi_environment.scenes.maze import generate_maze
from navi_environment.scenes.warehouse import generate_warehouse

FAMILIES: dict[str, Callable[[int], SceneLayout]] = {
    "apartment": generate_apartment,
    "maze": generate_maze,
    "warehouse": generate_warehouse,
    "building": generate_building,
    "hall": generate_hall,
}
"""Family name -> seeded generator. Same seed, same layout (bit for bit)."""

PROCEDURAL_PREFIX = "procedural:"
_SPEC = re.compile(r"^procedural:(?P<family>[a-z_]+)(?::seed=(?P<seed>\d+))?$")


@dataclass(frozen=True)
class ProceduralSpec:
    """A parsed procedural source: family and seed."""

    family: str
    seed: int

    def __str__(self) -> str:
        return f"{PROCEDURAL_PREFIX}{self.family}:seed={self.seed}"


def is_procedural(source: str) -> bool:
    """True when ``source`` names a procedural scene rather than a file."""
    return source.startswith(PROCEDURAL_PREFIX)


def parse_procedural(source: str) -> ProceduralSpec:
    """Parse ``procedural:<family>[:seed=<n>]`` (seed defaults to 0).

    Raises:
        ValueError: for bad syntax or an unknown family (the message lists the families).
    """
    match = _SPEC.match(source.strip())
    if match is None:
        raise ValueError(f"bad procedural source {source!r}: expected 'procedural:<family>[:seed=<n>]'")
    family = match.group("family")
    if family not in FAMILIES:
        raise ValueError(f"unknown scene family {family!r} in {source!r}; known: {', '.join(FAMILIES)}")
    return ProceduralSpec(family, int(match.group("seed") or 0))


def generate(family: str, seed: int) -> SceneLayout:
    """Generate the layout of ``family`` for ``seed``.

    Raises:
        ValueError: for an unknown family.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown scene family {family!r}; known: {', '.join(FAMILIES)}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    return FAMILIES[family](seed)
