"""``navi-actor bc-pretrain`` (also ``brain bc-pretrain``): behaviour cloning from demonstrations.

Register it in ``navi_actor/cli.py`` with ``main.add_command(bc_pretrain)`` before the loop that
copies ``main``'s commands onto ``brain_main``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from navi_actor.config import ActorSettings
from navi_common.cli_options import settings_kwargs, settings_options

if TYPE_CHECKING:
    from navi_actor.bc.trainer import BCHistory


def imitation_report(history: BCHistory) -> tuple[str, str | None]:
    """The result line of a BC run and, when imitation is worse than no learning at all, a warning.

    Why: with a single episode nothing is held out and the line said "held-out action MSE nan"; a
    policy whose held-out error exceeds the mean-action baseline has learned nothing usable, which a
    user should hear before fine-tuning it with RL.
    """
    line = f"train nll {history.train_nll[0]:.4f} -> {history.train_nll[-1]:.4f}; "
    if not history.holdout_mse:
        return line + "held-out action MSE: n/a (no episode held out; record more episodes to score it)", None
    holdout, baseline = history.kept_holdout_mse, history.baseline_mse
    assert holdout is not None  # held-out episodes exist
    line += f"held-out action MSE {holdout:.4f} vs mean-action baseline {baseline:.4f}"
    if history.best_epoch not in (0, len(history.train_nll)):
        line += f" (kept epoch {history.best_epoch} of {len(history.train_nll)}: the lowest held-out MSE)"
    if holdout >= baseline:
        return line, (
            f"behaviour cloning is no better than always predicting the mean action ({holdout:.4f} >= "
            f"{baseline:.4f}); more demonstrations or epochs may help"
        )
    return line, None


BC_FIELDS = ("bc.demonstrations", "bc.epochs", "bc.sequence_length", "bc.streams", "bc.learning_rate",
             "bc.holdout_fraction", "bc.keep_best", "bc.patience", "bc.log_std", "encoder_backend",
             "temporal_core", "train.device", "train.seed", "train.torch_threads", "train.artifacts_dir",
             "policy.action_squash")  # fmt: skip
"""Settings ``bc-pretrain`` exposes as ``--<field>`` (:mod:`navi_common.cli_options`)."""


@click.command("bc-pretrain", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--checkpoint", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="Start from this checkpoint (recorded as the parent) [a fresh policy].")  # fmt: skip
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), help="Checkpoint file [run folder].")
@click.option("--promote", is_flag=True, help="Also promote the checkpoint into the model registry.")
@settings_options(ActorSettings, BC_FIELDS)
def bc_pretrain(*, checkpoint: Path | None, out: Path | None, promote: bool, **options: Any) -> None:
    """Pre-train the policy by behaviour cloning on recorded demonstrations.

    Trains the same policy PPO uses (encoder -> temporal core -> heads) with truncated BPTT over
    episode sequences, maximising the log-likelihood of the demonstrated (executed, [-1, 1])
    actions under a frozen log-std. Writes a v3 checkpoint with training_source=bc and its parent
    as lineage. Continue with RL: `navi-actor promote <checkpoint>` then `navi-actor train`.
    """
    from navi_actor.bc.dataset import DemonstrationError
    from navi_actor.bc.pretrain import run_pretrain
    from navi_actor.checkpoints import CheckpointError
    from navi_actor.cli import build_settings, promote_into_registry
    from navi_actor.devices import DeviceUnavailableError, check_device
    from navi_common import configure_logging
    from navi_contracts import artifacts_root

    settings = build_settings(**settings_kwargs(options))  # CLI values beat NAVI_ACTOR_BC__* / .env
    config = settings.bc
    try:
        check_device(settings.train.device)
    except DeviceUnavailableError as error:
        raise click.ClickException(str(error)) from error
    configure_logging(settings.log_level, settings.log_json)
    if settings.train.torch_threads is not None:
        import torch

        torch.set_num_threads(settings.train.torch_threads)
    artifacts = settings.train.artifacts_dir or artifacts_root()
    demonstrations = config.demonstrations or artifacts / "demonstrations"
    try:
        result = run_pretrain(
            config, settings.policy_config(), demonstrations=demonstrations, runs_root=artifacts / "runs",
            parent=checkpoint, out=out,
            device=settings.train.device, seed=settings.train.seed,
            settings_json={"actor": settings.model_dump(mode="json")},
        )  # fmt: skip
    except (DemonstrationError, CheckpointError) as error:
        raise click.ClickException(str(error)) from error
    history = result.history
    line, warning = imitation_report(history)
    click.echo(f"bc checkpoint: {result.checkpoint}\n{line}")
    if warning is not None:
        click.echo(f"warning: {warning}", err=True)
    if promote:
        click.echo(promote_into_registry(settings, result.checkpoint, "bc-pretrain", ["bc"]))
