"""``navi-environment preview``: the PNG writer, and pictures that tell right-way-up, sideways and
open-sky scenes apart."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

from navi_environment.cli import main
from navi_environment.corpus.settings import CompileSettings
from navi_environment.corpus.sources import compile_source
from navi_environment.gmdag.format import GmdagAsset
from navi_environment.gmdag.writer import write_gmdag
from navi_environment.preview.png import decode_png, encode_png
from navi_environment.preview.render import GAP, PANEL, SKY, SPAWN, render_preview


def test_png_round_trip_and_bad_input() -> None:
    image = np.random.default_rng(0).integers(0, 256, size=(7, 5, 3), dtype=np.uint8)
    data = encode_png(image)
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    np.testing.assert_array_equal(decode_png(data), image)
    with pytest.raises(ValueError, match="uint8"):
        encode_png(image.astype(np.float32))


@pytest.fixture(scope="module")
def compiled(
    tmp_path_factory: pytest.TempPathFactory, scene_meshes: SimpleNamespace
) -> dict[str, GmdagAsset]:
    folder = tmp_path_factory.mktemp("preview")
    scene_meshes.room().export(folder / "room.obj")
    scene_meshes.site().export(folder / "site.obj")
    settings = CompileSettings(resolution=64)
    return {
        "room": compile_source(str(folder / "room.obj"), settings, up_axis="z").asset,
        "sideways": compile_source(str(folder / "room.obj"), settings, up_axis="x").asset,
        "site": compile_source(str(folder / "site.obj"), settings).asset,
    }


def _panorama(image: np.ndarray) -> np.ndarray:
    return image[PANEL + GAP :]


def _sky_share(pixels: np.ndarray) -> float:
    return float((pixels == SKY).all(axis=-1).mean())


def _section_extent(image: np.ndarray) -> tuple[int, int]:
    """(height, width) in pixels of the solid (white) part of the section panel."""
    section = image[:PANEL, PANEL + GAP : 2 * PANEL + GAP]
    rows, cols = np.nonzero((section == 230).all(axis=-1))
    return int(np.ptp(rows)), int(np.ptp(cols))


def test_open_site_shows_sky_above_and_ground_below(compiled: dict[str, GmdagAsset]) -> None:
    preview = render_preview(compiled["site"])
    pano = _panorama(preview.image)
    half = pano.shape[0] // 2
    assert _sky_share(pano[: half // 2]) > 0.5 and _sky_share(pano[half + half // 2 :]) == 0.0
    assert (preview.image[:PANEL] == SPAWN).all(axis=-1).any() and preview.spawns > 0


def test_enclosed_room_has_no_sky_and_the_sideways_room_stands_tall(compiled: dict[str, GmdagAsset]) -> None:
    upright = render_preview(compiled["room"])
    assert _sky_share(_panorama(upright.image)) == 0.0
    height, width = _section_extent(upright.image)
    assert width > 1.5 * height  # 7 m wide, 3 m tall
    sideways = render_preview(compiled["sideways"])
    height, width = _section_extent(sideways.image)
    assert height > 1.5 * width


def test_preview_command_writes_a_png(compiled: dict[str, GmdagAsset], tmp_path: Path) -> None:
    path = tmp_path / "site.gmdag"
    write_gmdag(compiled["site"], path)
    out = tmp_path / "site.png"
    result = CliRunner().invoke(main, ["preview", "--gmdag-file", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "panorama from the best spawn" in result.output and "open to the sky" in result.output
    assert decode_png(out.read_bytes()).shape == (454, 3 * PANEL + 2 * GAP, 3)
    bad = CliRunner().invoke(main, ["preview", "--gmdag-file", str(path), "--out", str(out), "--level", "3"])
    assert bad.exit_code == 2 and "power of two" in bad.output
