"""Split a corpus into training and held-out scenes for benchmarks.

A corpus manifest lists its scenes family by family (apartments, mazes, warehouses, buildings,
halls). Holding out the *tail* of that list holds out a whole family: the learning benchmark then
measured transfer to a family with obstacle types that no training scene has (the halls' hanging
beams), not generalisation to unseen scenes. The default split is therefore *stratified*: the last
``share`` of every family's scenes is held out, so every family is both trained on and evaluated.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

SplitMode = Literal["stratified", "tail"]


def split_scenes(
    scenes: Sequence[Path], families: Sequence[str], share: float, mode: SplitMode = "stratified"
) -> tuple[list[Path], list[Path]]:
    """``(training, held_out)`` scenes, each in corpus order.

    Args:
        scenes: the corpus scenes, in manifest order.
        families: the family of each scene (same length; ``navi_environment.corpus.manifest.scene_families``).
        share: share of scenes to hold out, in (0, 1).
        mode: ``stratified``: the last ``round(share * n)`` (at least one) scenes of every family with
            two or more scenes; ``tail``: the last ``round(share * N)`` (at least one) of the corpus.

    Raises:
        ValueError: fewer than two scenes, mismatched lengths, a share outside (0, 1), or a split
            that leaves no training or no held-out scene.
    """
    if len(scenes) != len(families):
        raise ValueError(f"{len(scenes)} scenes but {len(families)} families")
    if len(scenes) < 2:
        raise ValueError("the corpus needs at least two scenes to hold one out")
    if not 0.0 < share < 1.0:
        raise ValueError(f"the held-out share must lie in (0, 1), got {share}")
    if mode == "tail":
        held = set(range(len(scenes) - max(1, round(len(scenes) * share)), len(scenes)))
    else:
        members: dict[str, list[int]] = {}
        for index, family in enumerate(families):
            members.setdefault(family, []).append(index)
        held = {
            index
            for group in members.values()
            if len(group) >= 2
            for index in group[len(group) - min(len(group) - 1, max(1, round(len(group) * share))) :]
        }
    train = [path for index, path in enumerate(scenes) if index not in held]
    held_out = [path for index, path in enumerate(scenes) if index in held]
    if not train or not held_out:
        raise ValueError(
            f"a {mode} split with share {share} of {len(scenes)} scenes leaves "
            f"{len(train)} training and {len(held_out)} held-out scenes; every family has one scene? "
            "use the tail split"
        )
    return train, held_out


def split_named(scenes: Sequence[Path], held_out_stems: Sequence[str]) -> tuple[list[Path], list[Path]]:
    """``(training, held_out)``: exactly the scenes named by ``held_out_stems`` (file stems) held out.

    Why: a corpus grown with more scenes per family (``corpus prepare --count-per-family``) keeps the
    scenes it had (a scene's name is its family and seed), but the stratified split would then hold out
    other ones; naming the held-out scenes keeps a learning run on the grown corpus judged on the same
    scenes as earlier runs.

    Raises:
        ValueError: a name the corpus does not have, no name, or no scene left to train on.
    """
    wanted = list(dict.fromkeys(held_out_stems))
    if not wanted:
        raise ValueError("name at least one held-out scene")
    stems = {path.stem for path in scenes}
    missing = [stem for stem in wanted if stem not in stems]
    if missing:
        raise ValueError(f"the corpus has no scene named {', '.join(missing)}")
    held = set(wanted)
    train = [path for path in scenes if path.stem not in held]
    held_out = [path for path in scenes if path.stem in held]
    if not train:
        raise ValueError("every scene of the corpus is held out: nothing is left to train on")
    return train, held_out
