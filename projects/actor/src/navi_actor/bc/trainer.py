"""Behaviour cloning: maximise the log-likelihood of demonstrated actions under the SAME policy
(encoder -> temporal core -> Gaussian head) that PPO trains, with truncated BPTT over sequences.

Loss. With the action log-std frozen, the Gaussian negative log-likelihood is the squared error of
the mean scaled by ``1 / (2 sigma^2)`` plus a constant: BC fits the mean, and RL later starts from a
known, sensible exploration noise instead of the collapsed std a free NLL fit would produce. We
report both the NLL and the plain action MSE (the imitation measure) per epoch.

A policy with a chunk head (``policy.action_chunk`` H > 1) also fits its H-1 later outputs to the
demonstrated actions of the next ticks (masked where the episode or the window ends), weighted by
``bc.chunk_coef``; their squared error is reported as ``train_chunk_mse``.

Demonstrated actions are the executed actions in [-1, 1]. The policy is scored on the raw action
that executes them (``models.raw_action`` for its ``action_squash``): with ``clip`` the demonstration
itself, so the raw Gaussian mean is fitted to it directly (the space PPO clips its samples into);
with ``tanh`` its ``atanh`` (clamped 0.01 inside the bounds), and the loss is the log-probability of
the demonstrated action under the squashed distribution, whose Jacobian term does not depend on the
weights: the raw mean is fitted to ``atanh(a)``, so the deployed ``tanh(mean)`` is ``a``. The chunk
head's later outputs, raw means as well, are fitted to the same raw targets. The reported MSEs
compare the physics mean action (clamped or squashed, what a deployed drone flies) with ``a``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog
import torch

from navi_actor.algorithms.losses import chunk_prediction_loss, visit_prediction_loss
from navi_actor.bc.config import BCConfig
from navi_actor.bc.dataset import DemoData, stream_indices
from navi_actor.bc.visit_features import demo_visit_features
from navi_actor.models import NaviPolicy, raw_action

log = structlog.get_logger()


@dataclass
class BCHistory:
    """Per-epoch metrics of a BC run."""

    train_nll: list[float] = field(default_factory=list)
    train_mse: list[float] = field(default_factory=list)
    holdout_mse: list[float] = field(default_factory=list)
    train_chunk_mse: list[float] = field(default_factory=list)  #: empty without a chunk head
    train_visit_bce: list[float] = field(default_factory=list)  #: empty without a visit head
    baseline_mse: float = math.nan  #: held-out MSE of always predicting the training mean action
    optimizer_steps: int = 0
    seconds: float = 0.0
    best_epoch: int = 0  #: 1-based epoch whose weights the policy holds at the end (0: the last)

    @property
    def kept_holdout_mse(self) -> float | None:
        """Held-out action MSE of the weights the policy keeps (None without held-out episodes)."""
        return self.holdout_mse[(self.best_epoch or len(self.holdout_mse)) - 1] if self.holdout_mse else None


@dataclass
class _BestEpoch:
    """The epoch with the lowest held-out action MSE: its weights (``keep_best``), and whether
    ``patience`` epochs (0 = never) have passed without improving on it.

    Why: the warm start's clone stops improving on held-out flights after ~11 of 20 epochs while its
    training error keeps falling, and its epoch-20 MSE was 10 % above its best
    (docs/experiments/2026-12-thirty-minutes-all-in.md). Stopping is off by default: on small or
    bumpy held-out sets the MSE rises for a few epochs before falling far lower (tests/bc).
    """

    patience: int
    keep: bool
    mse: float = math.inf
    epoch: int = 0
    weights: dict[str, torch.Tensor] | None = None

    def should_stop(self, policy: NaviPolicy, epoch: int, mse: float) -> bool:
        """Record ``epoch``'s held-out ``mse``; True when training should stop."""
        if mse < self.mse:
            self.mse, self.epoch = mse, epoch
            if self.keep:
                self.weights = {name: t.detach().clone() for name, t in policy.state_dict().items()}
            return False
        return 0 < self.patience <= epoch - self.epoch

    def restore(self, policy: NaviPolicy, last_epoch: int) -> int:
        """Load the best epoch's weights into ``policy`` (unless they are the last's or not kept); the
        epoch whose weights ``policy`` holds."""
        if self.weights is None:
            return last_epoch
        if self.epoch != last_epoch:
            policy.load_state_dict(self.weights)
        return self.epoch


def freeze_log_std(policy: NaviPolicy, value: float | None) -> None:
    """Fix the actor's log-std (optionally its global value to ``value``) and exclude it, with the
    state gate of ``log_std_mode=state``, from gradients (cloning fits the mean only)."""
    parameter = policy.actor.log_std_param
    if value is not None:
        with torch.no_grad():
            parameter.fill_(value)
    parameter.requires_grad_(False)
    if policy.actor.log_std_layer is not None:
        policy.actor.log_std_layer.requires_grad_(False)


def _windows(  # type: ignore[no-untyped-def]
    data: DemoData, index: torch.Tensor, starts: torch.Tensor, length: int, *, device: torch.device,
    visits: torch.Tensor | None,
):  # fmt: skip
    """Yield ``(obs [L,B,C,Az,El], actions [L,B,4], starts [L,B], visit features [L,B,F] or None)``
    windows along T, on ``device``, observations widened to float32 (``visits``: the frames' features,
    :func:`_visit_features`)."""
    for t0 in range(0, index.shape[0], length):
        rows = index[t0 : t0 + length]  # [L, B]
        yield (
            data.observations[rows].to(device, torch.float32, non_blocking=True),
            data.actions[rows].to(device, non_blocking=True),
            starts[t0 : t0 + length].to(device),
            None if visits is None else visits[rows].to(device, non_blocking=True),
        )


def _visit_features(policy: NaviPolicy, data: DemoData) -> torch.Tensor | None:
    """``[N, F]`` visit features of the frames for a policy that reads or predicts them (visit_input,
    visit_prediction), else None."""
    return demo_visit_features(data, policy.cfg.visits) if policy.keeps_visit_features else None


def sequence_mse(
    policy: NaviPolicy, data: DemoData, streams: int, length: int, *, visits: torch.Tensor | None = None
) -> float:
    """Mean squared error of the policy's physics mean action vs demonstrated actions, state carried
    through episodes.

    Args:
        policy: the policy (evaluated without gradients).
        data: frames to score (e.g. held-out episodes).
        streams: parallel rows.
        length: window length.
        visits: the frames' visit features (:func:`_visit_features`), when the caller keeps them;
            None computes them (a replay of every episode, as long as the longest one: ``train_bc``
            computes the held-out ones once instead of every epoch).

    Returns:
        MSE over every scored frame and action dimension.
    """
    device = next(policy.parameters()).device
    index, starts = stream_indices(data.episode_bounds, min(streams, max(1, len(data) // 2)), None)
    state = policy.initial_state(index.shape[1], device)
    total, count = torch.zeros((), device=device), 0
    with torch.no_grad():
        features = visits if visits is not None else _visit_features(policy, data)
        windows = _windows(data, index, starts, length, device=device, visits=features)
        for obs, actions, resets, visit_features in windows:
            out = policy.evaluate_sequences(
                obs, raw_action(actions, policy.action_squash), state, resets,
                loop_scores=_no_loops(resets), visit_features=visit_features,
            )  # fmt: skip
            state = out.final_state
            total += (policy.physics_action(out.action_mean) - actions).square().sum()
            count += actions.numel()
    return float(total) / max(count, 1)


def _no_loops(resets: torch.Tensor) -> torch.Tensor:
    """Loop scores of 0 for a demonstration window ``[T, B]``.

    Why: cloning teaches how to react to a view; whether a view is a revisit is learned by PPO, whose
    memory input starts as a zero projection (``policy.memory_input``), so a cloned policy acts the
    same with or without its memory until PPO trains that projection.
    """
    return torch.zeros(resets.shape, device=resets.device)


def baseline_mse(train: DemoData, holdout: DemoData) -> float:
    """Held-out MSE of the constant predictor "training mean action" (the chance level)."""
    mean = train.actions.mean(dim=0)
    return float((holdout.actions - mean).square().mean())


def train_bc(
    policy: NaviPolicy,
    train: DemoData,
    holdout: DemoData,
    config: BCConfig,
    generator: torch.Generator,
    *,
    on_epoch: Callable[[int, int, float], None] | None = None,
) -> BCHistory:
    """Train ``policy`` in place on ``train``; score imitation on ``holdout`` after every epoch.

    Args:
        policy: the policy (on its device; its log-std gets frozen).
        train: training episodes.
        holdout: held-out episodes (may be empty).
        config: epochs, keep_best and patience (on the held-out MSE), window length, streams,
            optimiser.
        generator: shuffles episodes into streams each epoch.
        on_epoch: called after every epoch with (epochs done, epochs, seconds so far): a caller's
            progress display (``train``'s warm start clones for minutes).

    Returns:
        :class:`BCHistory`.
    """
    device = next(policy.parameters()).device
    freeze_log_std(policy, config.log_std)
    parameters = [p for p in policy.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(parameters, lr=config.learning_rate, weight_decay=config.weight_decay)
    history = BCHistory(baseline_mse=baseline_mse(train, holdout) if len(holdout) else math.nan)
    started = time.monotonic()
    train_visits = _visit_features(policy, train)  # once: the frames' features do not change
    holdout_visits = _visit_features(policy, holdout) if len(holdout) else None
    watched = (config.keep_best or config.patience > 0) and len(holdout) > 0
    best = _BestEpoch(config.patience, config.keep_best) if watched else None
    for epoch in range(config.epochs):
        index, starts = stream_indices(train.episode_bounds, config.streams, generator)
        state = policy.initial_state(index.shape[1], device)
        nll_sum, mse_sum, windows = torch.zeros((), device=device), torch.zeros((), device=device), 0
        chunk_sum, visit_sum = torch.zeros((), device=device), torch.zeros((), device=device)
        policy.train()
        for obs, actions, resets, visit_features in _windows(
            train, index, starts, config.sequence_length, device=device, visits=train_visits
        ):
            targets = raw_action(actions, policy.action_squash)
            out = policy.evaluate_sequences(
                obs, targets, state, resets, loop_scores=_no_loops(resets), visit_features=visit_features
            )
            state = out.final_state.detach()  # truncated BPTT: carry the state, cut the graph
            loss = -out.log_prob.mean()
            if out.later_means is not None:
                chunk_loss = chunk_prediction_loss(out.later_means, targets, resets)
                loss = loss + config.chunk_coef * chunk_loss
                chunk_sum += chunk_loss.detach()
            total = loss  # train_nll stays the imitation loss; the visit head's is reported apart
            if out.visit_logits is not None:
                assert visit_features is not None  # a visit head's policy keeps the frames' features
                visit_loss = visit_prediction_loss(out.visit_logits, visit_features)
                total = loss + config.visit_prediction_coef * visit_loss
                visit_sum += visit_loss.detach()
            optimizer.zero_grad(set_to_none=True)
            total.backward()
            torch.nn.utils.clip_grad_norm_(parameters, config.max_grad_norm)
            optimizer.step()
            nll_sum += loss.detach()
            mse_sum += (policy.physics_action(out.action_mean.detach()) - actions).square().mean()
            windows += 1
        policy.eval()
        _record_epoch(policy, history, windows, nll=nll_sum, mse=mse_sum, chunk=chunk_sum, visit=visit_sum)
        if len(holdout):
            history.holdout_mse.append(
                sequence_mse(policy, holdout, config.streams, config.sequence_length, visits=holdout_visits)
            )
        _log_epoch(history, config.epochs, time.monotonic() - started)
        if on_epoch is not None:
            on_epoch(epoch + 1, config.epochs, time.monotonic() - started)
        if best is not None and best.should_stop(policy, epoch + 1, history.holdout_mse[-1]):
            break
    _keep_best(policy, history, best, config.epochs)
    history.seconds = time.monotonic() - started
    return history


def _log_epoch(history: BCHistory, epochs: int, seconds: float) -> None:
    """One ``actor.bc.epoch`` event with the epoch's metrics."""
    log.info(
        "actor.bc.epoch", epoch=len(history.train_nll), epochs=epochs,
        train_nll=round(history.train_nll[-1], 4), train_mse=round(history.train_mse[-1], 5),
        holdout_mse=round(history.holdout_mse[-1], 5) if history.holdout_mse else None,
        baseline_mse=round(history.baseline_mse, 5), seconds=round(seconds, 1),
        visit_bce=round(history.train_visit_bce[-1], 4) if history.train_visit_bce else None,
    )  # fmt: skip


def _keep_best(policy: NaviPolicy, history: BCHistory, best: _BestEpoch | None, epochs: int) -> None:
    """Load the best epoch's weights when they are kept; record which epoch ``policy`` holds."""
    epochs_run = len(history.train_nll)
    history.best_epoch = best.restore(policy, epochs_run) if best is not None else epochs_run
    if history.best_epoch != epochs_run or epochs_run < epochs:
        log.info(
            "actor.bc.best_epoch_kept", epochs_run=epochs_run, epochs=epochs, kept_epoch=history.best_epoch,
            holdout_mse=round(history.kept_holdout_mse or math.nan, 5),
        )  # fmt: skip


def _record_epoch(
    policy: NaviPolicy, history: BCHistory, windows: int, *, nll: torch.Tensor, mse: torch.Tensor,
    chunk: torch.Tensor, visit: torch.Tensor,
) -> None:  # fmt: skip
    """Append an epoch's mean training losses (summed over its ``windows``) to ``history``."""
    history.train_nll.append(float(nll) / windows)
    history.train_mse.append(float(mse) / windows)
    if policy.actor.chunk is not None:
        history.train_chunk_mse.append(float(chunk) / windows)
    if policy.visit_head is not None:
        history.train_visit_bce.append(float(visit) / windows)
    history.optimizer_steps += windows
