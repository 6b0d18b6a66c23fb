"""GMDAG reader: every malformed-file rule has its own message; mutated files never crash or hang."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from navi_environment.gmdag.format import HEADER, HEADER_BYTES, LEAF_FLAG, GmdagFormatError
from navi_environment.gmdag.reader import decode_gmdag, load_gmdag
from navi_environment.gmdag.sample import query_points, sample_dense, void_distance
from navi_environment.gmdag.writer import compile_sdf_to_gmdag, encode_gmdag


@pytest.fixture(scope="module")
def valid_bytes(sphere_grid_factory) -> bytes:  # type: ignore[no-untyped-def]
    sdf, semantic, bmin, voxel = sphere_grid_factory(resolution=16, voxel=0.2, radius=1.0)
    return encode_gmdag(compile_sdf_to_gmdag(sdf, semantic, bmin, voxel))


def _with_header(data: bytes, **fields: object) -> bytes:
    names = ("magic", "version", "resolution", "bx", "by", "bz", "voxel_size", "node_count")
    values = dict(zip(names, HEADER.unpack_from(data, 0), strict=True))
    values.update(fields)
    return HEADER.pack(*(values[name] for name in names)) + data[HEADER_BYTES:]


def _pool_bytes(words: list[int], resolution: int = 4) -> bytes:
    header = HEADER.pack(b"GDAG", 1, resolution, 0.0, 0.0, 0.0, 1.0, len(words))
    return header + np.array(words, dtype="<u8").tobytes()


def _inner(mask: int, base: int) -> int:
    return (mask << 55) | base


LEAF_ONE = int(LEAF_FLAG) | 0x3C00  # distance 1.0 m, semantic 0


def test_valid_file_round_trips(valid_bytes: bytes) -> None:
    asset = decode_gmdag(valid_bytes, source="sphere.gmdag")
    assert asset.resolution == 16
    assert encode_gmdag(asset) == valid_bytes


@pytest.mark.parametrize(
    ("mutate", "rule"),
    [
        (lambda d: d[:20], "truncated header"),
        (lambda d: _with_header(d, magic=b"GDAX"), "wrong magic"),
        (lambda d: _with_header(d, version=2), "unsupported version"),
        (lambda d: _with_header(d, resolution=48), "not a power of two"),
        (lambda d: _with_header(d, resolution=0), "not a power of two"),
        (lambda d: _with_header(d, bx=float("nan")), "non-finite bounds"),
        (lambda d: _with_header(d, bz=float("inf")), "non-finite bounds"),
        (lambda d: _with_header(d, voxel_size=0.0), "non-positive voxel size"),
        (lambda d: _with_header(d, voxel_size=-0.1), "non-positive voxel size"),
        (lambda d: _with_header(d, voxel_size=float("nan")), "non-positive voxel size"),
        (lambda d: _with_header(d, voxel_size=3e38), "bmax = bmin + resolution * voxel_size overflows"),
        (lambda d: _with_header(d[:HEADER_BYTES], node_count=0), "empty node pool"),
        (lambda d: d + b"\x00\x01\x02", "trailing bytes"),
        (lambda d: _with_header(d, node_count=HEADER.unpack_from(d)[7] + 1), "beyond the payload"),
        (lambda d: _with_header(d, node_count=HEADER.unpack_from(d)[7] - 1), "short of the payload"),
    ],
)
def test_header_and_payload_rules(valid_bytes: bytes, mutate, rule: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(GmdagFormatError, match=r"broken\.gmdag") as raised:
        decode_gmdag(mutate(valid_bytes), source="broken.gmdag")
    assert rule in str(raised.value)


@pytest.mark.parametrize(
    ("words", "rule"),
    [
        ([_inner(0b1, 5), LEAF_ONE], "child base out of range"),
        ([_inner(0b11, 1), 3, 7, LEAF_ONE], "child index out of range"),
        ([_inner(0b1, 1), 0], "cycle"),
        ([_inner(0b1, 1), 2, _inner(0b1, 3), 0], "cycle"),
        ([_inner(0b1, 1), 2, _inner(0b1, 3), 4, _inner(0b1, 5), 6, LEAF_ONE], "too deep"),
        ([int(LEAF_FLAG) | 0x7C00], "leaf distance is not finite"),
        ([_inner(0b1, 1), 2, int(LEAF_FLAG) | 0xFE00], "leaf distance is not finite"),
    ],
)
def test_layout_walk_rules(words: list[int], rule: str) -> None:
    with pytest.raises(GmdagFormatError, match=r"walk\.gmdag") as raised:
        decode_gmdag(_pool_bytes(words), source="walk.gmdag")
    assert rule in str(raised.value)


def test_shared_subtree_too_deep_at_its_second_use_is_rejected() -> None:
    # Node 3 (inner, one level) is first met at depth 1 and fits; its second use sits at depth 2
    # (resolution 4 allows inner nodes at depths 0 and 1 only).
    words = [_inner(0b11, 1), 3, 5, _inner(0b1, 4), 7, _inner(0b1, 6), 3, LEAF_ONE]
    with pytest.raises(GmdagFormatError, match="too deep"):
        decode_gmdag(_pool_bytes(words), source="shared.gmdag")


def test_hand_written_dag_with_shared_children_is_accepted() -> None:
    words = [_inner(0b10000001, 1), 3, 3, _inner(0b1, 4), 5, LEAF_ONE]
    asset = decode_gmdag(_pool_bytes(words), source="ok.gmdag")
    sdf, _ = sample_dense(asset)
    assert sdf[0, 0, 0] == 1.0 and sdf[2, 2, 2] == 1.0  # the shared child, reached twice
    assert sdf[3, 3, 3] == pytest.approx(void_distance(1, 1.0))  # its void octant 7
    assert sdf[0, 3, 0] == pytest.approx(void_distance(2, 1.0))  # the root's void octant 2


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gmdag"
    with pytest.raises(GmdagFormatError, match=r"nope\.gmdag"):
        load_gmdag(missing)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1, max_size=6),
    cut=st.one_of(st.none(), st.integers(min_value=0)),
    extra=st.binary(max_size=12),
)
def test_mutated_files_raise_only_format_errors(
    valid_bytes: bytes, edits: list[tuple[int, int]], cut: int | None, extra: bytes
) -> None:
    data = bytearray(valid_bytes)
    for position, value in edits:
        data[position % len(data)] = value
    if cut is not None:
        data = data[: cut % (len(data) + 1)]
    data += extra
    try:
        asset = decode_gmdag(bytes(data), source="mutated.gmdag")
    except GmdagFormatError as error:
        assert "mutated.gmdag" in str(error)
        return
    # Whatever the reader accepts must be safe to evaluate everywhere (a mutated header may
    # claim a huge resolution: evaluate densely only where that is affordable).
    if asset.resolution <= 64:
        sdf, _ = sample_dense(asset)
        assert not np.isnan(sdf).any()
    centre = asset.bmin + asset.extent_m / 2
    values, _ = query_points(asset, np.stack([centre, asset.bmin - 1.0, asset.bmax + 1.0]))
    assert not np.isnan(values).any()


def test_header_struct_is_32_bytes() -> None:
    assert struct.calcsize("<4sIIffffI") == HEADER_BYTES == 32
