"""``navi-auditor demo-info``, ``demo-merge`` and ``demo-verify``."""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np

from navi_auditor.demos.reader import load_demonstration
from navi_auditor.demos.writer import merge_parts
from navi_common.demonstrations import DemoFormatError


@click.command("demo-info")
@click.argument("path", type=click.Path(path_type=Path, exists=True))
def demo_info(path: Path) -> None:
    """Print a JSON summary of a demonstration (.npz or an unfinished .parts folder)."""
    try:
        demo = load_demonstration(path)
    except DemoFormatError as error:
        raise click.ClickException(str(error)) from error
    actions = demo.actions
    click.echo(json.dumps({
        "path": str(path), "frames": len(demo), "episodes": int(demo.episode_starts.sum()),
        "segments": len(demo.segment_seeds), "scenes": sorted(set(demo.segment_scenes.tolist())),
        "matrix_shape": demo.metadata.get("matrix_shape"), "pilot": demo.metadata.get("pilot"),
        "collisions": int(demo.frames["collisions"].sum()),
        "action_mean": np.round(actions.mean(axis=0), 4).tolist() if len(demo) else None,
    }))  # fmt: skip


@click.command("demo-merge")
@click.argument("parts", type=click.Path(path_type=Path, exists=True, file_okay=False))
def demo_merge(parts: Path) -> None:
    """Finish a demonstration an interrupted session left as a <name>.parts folder."""
    out = parts.with_suffix(".npz")
    if out.exists():
        raise click.ClickException(f"{out} exists already")
    merge_parts(parts, out)
    click.echo(f"merged {parts} -> {out}")


@click.command("demo-verify")
@click.argument("path", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--device", default="cpu", show_default=True, help="torch device of the simulator.")
def demo_verify(path: Path, device: str) -> None:
    """Re-fly the recorded actions from each segment's scene and seed; fail if observations differ."""
    from navi_auditor.demos.replay import replay_demonstration

    try:
        check = replay_demonstration(load_demonstration(path), device=device)
    except DemoFormatError as error:
        raise click.ClickException(str(error)) from error
    click.echo(json.dumps(check.__dict__))
    if check.first_mismatch is not None:
        raise click.ClickException(f"replay diverges at frame {check.first_mismatch}")
