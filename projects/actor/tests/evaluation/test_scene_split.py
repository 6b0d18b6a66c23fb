"""Held-out scene splits of the learning benchmark: stratified by family, the corpus tail, or named."""

from __future__ import annotations

from pathlib import Path

import pytest

from navi_actor.evaluation.scene_split import split_named, split_scenes

FAMILIES = ["apartment"] * 4 + ["maze"] * 4 + ["hall"] * 4


def _paths(families: list[str]) -> list[Path]:
    counts: dict[str, int] = {}
    paths = []
    for family in families:
        paths.append(Path(f"{family}_{counts.setdefault(family, 0):03d}.gmdag"))
        counts[family] += 1
    return paths


def test_stratified_split_holds_out_the_tail_of_every_family() -> None:
    scenes = _paths(FAMILIES)
    train, held = split_scenes(scenes, FAMILIES, 0.2)
    assert [p.stem for p in held] == ["apartment_003", "maze_003", "hall_003"]
    assert len(train) == 9 and not set(train) & set(held)
    assert train == [p for p in scenes if p not in held]  # corpus order kept


def test_tail_split_holds_out_the_end_of_the_corpus() -> None:
    train, held = split_scenes(_paths(FAMILIES), FAMILIES, 0.25, "tail")
    assert [p.stem for p in held] == ["hall_001", "hall_002", "hall_003"]
    assert len(train) == 9


def test_stratified_split_never_empties_a_family_and_skips_singletons() -> None:
    families = ["apartment", "apartment", "maze", "hall", "hall", "hall"]
    train, held = split_scenes(_paths(families), families, 0.9)
    assert [p.stem for p in held] == ["apartment_001", "hall_001", "hall_002"]
    assert [p.stem for p in train] == ["apartment_000", "maze_000", "hall_000"]


@pytest.mark.parametrize(
    ("families", "share", "message"),
    [
        (["maze"], 0.2, "at least two scenes"),
        (["maze", "hall"], 0.2, "leaves 2 training and 0 held-out"),
        (["maze", "maze"], 1.0, r"share must lie in \(0, 1\)"),
    ],
)
def test_impossible_splits_fail_with_a_reason(families: list[str], share: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        split_scenes(_paths(families), families, share)


def test_named_split_holds_out_exactly_the_named_scenes_in_corpus_order() -> None:
    scenes = _paths(FAMILIES)
    train, held = split_named(scenes, ["hall_001", "apartment_003", "hall_001"])
    assert [p.stem for p in held] == ["apartment_003", "hall_001"]
    assert len(train) == len(scenes) - 2 and not {p.stem for p in train} & {"apartment_003", "hall_001"}
    # a grown corpus keeps the same held-out scenes under their names
    grown = _paths(["apartment"] * 16 + ["maze"] * 16)
    assert [p.stem for p in split_named(grown, ["apartment_003"])[1]] == ["apartment_003"]


@pytest.mark.parametrize(
    ("names", "message"),
    [
        ([], "at least one held-out scene"),
        (["apartment_000", "kitchen_007"], "no scene named kitchen_007"),
        (["apartment_000", "apartment_001"], "nothing is left to train on"),
    ],
)
def test_impossible_named_splits_fail_with_a_reason(names: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        split_named(_paths(["apartment", "apartment"]), names)
