"""Fly a chunked policy as a delayed real-time brain does; record the frontier planner's labels (DAgger).

The frames go to ``--out`` as demonstrations whose actions are what the planner would have done at
each state the delayed policy reached (:mod:`navi_actor.bc.delayed_corrections`). Train on them with
the original flights, starting from the policy:

    uv run python scripts/record_delayed_corrections.py --checkpoint CKPT --gmdag-file SCENE \
        --out artifacts/demonstrations/delayed --delays 3,4 --rounds 8 --seed 100
    uv run navi-actor bc-pretrain --checkpoint CKPT --demonstrations FOLDER_WITH_BOTH

Prints ONE JSON line (files, frames, the delayed flights' collisions per drone-tick).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
import torch


def _delays(text: str) -> tuple[int, ...]:
    """``"3,4"`` -> (3, 4); a one-line refusal for anything that is not a list of ticks >= 0."""
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise click.BadParameter(f"expected ticks like 3,4, got {text!r}", param_hint="--delays") from None
    if any(value < 0 for value in values):
        raise click.BadParameter(f"delays are ticks >= 0, got {text!r}", param_hint="--delays")
    return values


@click.command()
@click.option("--checkpoint", required=True, type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="A policy with a chunk head (policy.action_chunk >= 2).")  # fmt: skip
@click.option("--gmdag-file", required=True, type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="The scene to fly (at the policy's sensor).")  # fmt: skip
@click.option("--out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Folder for the demonstrations (created).")  # fmt: skip
@click.option("--delays", default="3,4", show_default=True,
              help="Brain delays in ticks, one per round in turn (2 periods of latency: 3-4).")  # fmt: skip
@click.option("--rounds", default=8, show_default=True, type=click.IntRange(min=1), help="Flights per drone.")
@click.option("--ticks", default=400, show_default=True, type=click.IntRange(min=1), help="Ticks per flight.")
@click.option(
    "--drones", default=16, show_default=True, type=click.IntRange(min=1), help="Drones flown at once."
)
@click.option("--seed", default=100, show_default=True,
              help="Seeds the starts: not a seed a benchmark judges on (0, 1, 2).")  # fmt: skip
def main(*, checkpoint: Path, gmdag_file: Path, out: Path, delays: str, rounds: int, ticks: int, drones: int,
         seed: int) -> None:  # fmt: skip
    """Record delayed flights of CHECKPOINT relabelled by the frontier planner; print one JSON line."""
    from bench_chunk_prediction import chunk_policy_and_scene  # scripts/ is on the path of a script

    from navi_actor.bc.delayed_corrections import record_delayed_corrections
    from navi_common import configure_logging

    configure_logging("warning", production=False)
    torch.set_num_threads(1)
    delay_ticks = _delays(delays)
    policy, backend = chunk_policy_and_scene(checkpoint, gmdag_file, drones)
    began = time.perf_counter()
    try:
        recorded = record_delayed_corrections(
            policy, backend, out, rounds=rounds, ticks=ticks, delays=delay_ticks, seed=seed
        )
    except FileExistsError as error:
        raise click.ClickException(str(error)) from None
    line = {
        "script": "record_delayed_corrections", "checkpoint": str(checkpoint), "scene": str(gmdag_file),
        "out": str(out), "delays": list(delay_ticks), "rounds": rounds, "ticks": ticks, "drones": drones,
        "seed": seed, "files": len(recorded.files), "frames": recorded.steps,
        "collisions_per_drone_tick": recorded.collisions / max(recorded.drone_ticks, 1),
        "seconds": round(time.perf_counter() - began, 1),
    }  # fmt: skip
    click.echo(json.dumps(line))


if __name__ == "__main__":
    main()
