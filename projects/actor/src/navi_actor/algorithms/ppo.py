"""The PPO learner: sequence-native minibatches, clipped losses, KL early stop, Adam.

One :meth:`PPOLearner.update` consumes one filled :class:`RolloutStorage`. Loss statistics stay on
the device as a running sum and are copied to the host once per epoch (that copy is also where the KL
early stop is decided), so the inner loop never synchronises with the host.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import torch
from torch import nn

from navi_actor.algorithms.losses import (
    chunk_prediction_loss,
    clipped_surrogate_loss,
    clipped_value_loss,
    kl_to_reference,
    self_imitation_loss,
    visit_prediction_loss,
)
from navi_actor.algorithms.stage_timer import StageTimer
from navi_actor.algorithms.update_metrics import (
    CHUNK_METRIC,
    DAGGER_METRIC,
    METRIC_NAMES,
    OPTIONAL_METRICS,
    SELF_IMITATION_METRIC,
    SYMMETRY_METRIC,
    VISIT_METRIC,
    AllReduce,
    UpdateResult,
    explained_variance,
)
from navi_actor.config import PPOConfig
from navi_actor.memory.visits import mirror_visit_features
from navi_actor.models import NaviPolicy
from navi_actor.models.mirror import mirror_action, mirror_observation
from navi_actor.models.policy import SequenceEval
from navi_actor.storage.rollout_storage import RolloutStorage, SequenceBatch

AuxiliaryStep = Callable[[SequenceBatch], torch.Tensor]


class PPOLearner:
    """Owns the optimiser and the update schedule of one policy.

    Args:
        policy: the policy being trained.
        config: PPO hyper-parameters.
        total_updates: updates planned for the run (drives linear LR annealing); None = unbounded.
        reference_policy: frozen policy for the optional KL penalty (e.g. the BC checkpoint).
    """

    def __init__(
        self,
        policy: NaviPolicy,
        config: PPOConfig,
        total_updates: int | None = None,
        reference_policy: NaviPolicy | None = None,
    ) -> None:
        self.policy, self.config = policy, config
        if reference_policy is None and config.reference_refresh_updates is not None:
            reference_policy = copy.deepcopy(policy)  # a trust region around the recent policy
        self.reference_policy = reference_policy
        if reference_policy is not None:
            reference_policy.requires_grad_(False)
        self._log_std_start = float(policy.cfg.log_std_max)
        # Data parallelism (navi_actor.distributed.data_parallel) swaps in the DDP-wrapped evaluation,
        # the rank count DDP averages gradients over, and the sum over ranks for the metrics.
        self.evaluate: Callable[..., SequenceEval] = policy.evaluate_sequences
        self.ranks = 1
        self.all_reduce: AllReduce | None = None
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=config.learning_rate, eps=config.adam_eps)
        # The planner-label loss on the policy's own mean-action flights (navi_actor.bc.own_flights),
        # set by the runner once the first flight is labelled; None: no such term.
        self.dagger_loss: Callable[[NaviPolicy], torch.Tensor] | None = None
        self.update_index = 0
        self.total_updates: int | None = None
        self._schedule_start = 0
        self._time_spent: float | None = None
        self.schedule(total_updates)

    def schedule(self, planned_updates: int | None) -> None:
        """Anneal over the next ``planned_updates`` updates (None: constant), starting now.

        A resumed run calls this after restoring ``update_index``, so its schedule covers the budget
        of the new invocation instead of restarting from a counter the old run had already used.
        """
        self.total_updates, self._schedule_start = planned_updates, self.update_index

    def set_time_spent(self, share: float | None) -> None:
        """Share of a wall-clock budget (``--max-minutes``) spent so far; None: no time budget.

        A run bounded by time anneals over its time: the learning rate falls to 0 as the budget runs
        out, as it does over a step budget. With a constant rate a fixed-budget run ended on whatever
        policy its last, often large, updates made: on the learning benchmark a checkpoint at two
        thirds of the budget met every target and the final policy had lost them.
        """
        self._time_spent = share

    def budget_spent(self) -> float | None:
        """Share of the run's budget spent (0..1): the step or time budget closer to running out.

        None for an unbounded run. Every schedule (learning rate, discount, GAE lambda, log-std
        ceiling) follows this one share.
        """
        spent = [self._time_spent]
        if self.total_updates:
            spent.append((self.update_index - self._schedule_start) / self.total_updates)
        shares = [share for share in spent if share is not None]
        return min(1.0, max(shares)) if shares else None

    def current_learning_rate(self) -> float:
        """Learning rate for the next update: linear anneal to 0 over the step or time budget.

        With both budgets the one closer to running out sets the rate; an unbounded run keeps it.
        """
        share = self.budget_spent()
        if self.config.lr_schedule == "constant" or share is None:
            return self.config.learning_rate
        return self.config.learning_rate * max(0.0, 1.0 - share)

    def discount(self, gamma: float, gae_lambda: float, gamma_final: float | None = None,
                 gae_lambda_final: float | None = None) -> tuple[float, float]:  # fmt: skip
        """``(gamma, lambda)`` for the next rollout: linear from the start to the final values."""
        share = self.budget_spent() or 0.0
        return (
            gamma if gamma_final is None else gamma + share * (gamma_final - gamma),
            gae_lambda if gae_lambda_final is None else gae_lambda + share * (gae_lambda_final - gae_lambda),
        )

    def log_std_ceiling(self) -> float | None:
        """Upper bound of the global log-std for the next update (``ppo.final_log_std_max``), or None."""
        final = self.config.final_log_std_max
        if final is None:
            return None
        share = self.budget_spent() or 0.0
        return self._log_std_start + share * (final - self._log_std_start)

    def reference_kl_coef(self) -> float:
        """Weight of the KL-to-reference penalty for the next update (decays per update)."""
        if self.reference_policy is None:
            return 0.0
        return self.config.reference_kl_coef * self.config.reference_kl_decay**self.update_index

    def update(
        self,
        storage: RolloutStorage,
        generator: torch.Generator | None = None,
        auxiliary_step: AuxiliaryStep | None = None,
        on_minibatch: Callable[[], None] | None = None,
    ) -> UpdateResult:
        """Run up to ``epochs`` passes of minibatch PPO over a rollout with computed returns.

        Args:
            storage: filled storage whose :meth:`~RolloutStorage.compute_returns` has run.
            generator: torch generator for the minibatch shuffle (reproducible, checkpointed).
            auxiliary_step: optional extra learner (the RND predictor) called once per minibatch;
                returns its scalar loss (timed as ``rnd_step``).
            on_minibatch: optional callback after each minibatch (heartbeats; timed as ``callbacks``).

        Returns:
            An :class:`UpdateResult`.
        """
        cfg = self.config
        learning_rate = self.current_learning_rate()
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate
        self._apply_log_std_ceiling()
        value_fit = explained_variance(storage.values, storage.returns, self.all_reduce)
        if cfg.symmetry_coef > 0.0:
            storage.mirror_means = self._mirrored_means(storage)
        timer = StageTimer(use_cuda_events=cfg.cuda_timing and storage.device.type == "cuda")
        self.policy.train()
        storage.proximal_log_probs = None
        if storage.acting_version not in (None, self.update_index):  # older weights acted
            with timer.stage("proximal_eval"):
                storage.proximal_log_probs = self._proximal_log_probs(storage)
        per_epoch: list[dict[str, float]] = []
        early_stopped = False
        for _epoch in range(cfg.epochs):
            epoch_metrics = self._run_epoch(storage, generator, timer, auxiliary_step, on_minibatch)
            per_epoch.append(epoch_metrics)
            diverged = [
                k for k in ("policy_loss", "value_loss", "grad_norm") if not math.isfinite(epoch_metrics[k])
            ]
            if diverged:
                raise FloatingPointError(
                    f"PPO update {self.update_index} produced non-finite {', '.join(diverged)}; stopping "
                    "before more steps corrupt the weights (resume from the last checkpoint with a lower "
                    "learning rate)"
                )
            if cfg.target_kl is not None and epoch_metrics["approx_kl"] > cfg.target_kl:
                early_stopped = True
                break
        self.update_index += 1
        self._apply_log_std_ceiling()
        refresh = cfg.reference_refresh_updates
        if refresh is not None and self.reference_policy is not None and self.update_index % refresh == 0:
            self.reference_policy.load_state_dict(self.policy.state_dict())
        metrics = {**per_epoch[-1], "explained_variance": float(value_fit)}
        return UpdateResult(
            metrics=metrics,
            timings=timer.totals(),
            epochs_run=len(per_epoch),
            early_stopped=early_stopped,
            learning_rate=learning_rate,
            per_epoch=per_epoch,
        )

    def _mirrored_means(self, storage: RolloutStorage) -> torch.Tensor:
        """Targets of the symmetry loss ``[T, B, A]``: the mean actions this policy takes on the
        mirrored rollout (:mod:`navi_actor.models.mirror`), mirrored back. No gradients.

        The mirrored rollout is replayed once per update from the rollout's first stored state, so
        after an episode start the mirrored history is exact and before it the recurrent state is
        the original one's (a regulariser's approximation, not a PPO quantity).
        """
        with torch.no_grad():
            mirrored = self.policy.evaluate_sequences(
                mirror_observation(storage.obs),
                mirror_action(storage.actions),
                self.policy.mirror_state(storage.sequence_states[0]),
                storage.episode_starts,
                loop_scores=storage.loop_scores,  # a mirrored flight revisits the same places
                visit_features=mirror_visit_features(storage.visit_features, self.policy.cfg.visits.sectors),
            )
        return mirror_action(mirrored.action_mean)

    def _apply_log_std_ceiling(self) -> None:
        """Lower the global log-std parameter to the scheduled ceiling (kept in the checkpoint)."""
        ceiling = self.log_std_ceiling()
        if ceiling is not None:
            with torch.no_grad():
                self.policy.actor.log_std_param.clamp_(max=ceiling)

    def _run_epoch(
        self,
        storage: RolloutStorage,
        generator: torch.Generator | None,
        timer: StageTimer,
        auxiliary_step: AuxiliaryStep | None,
        on_minibatch: Callable[[], None] | None,
    ) -> dict[str, float]:
        cfg = self.config
        sums = torch.zeros(len(METRIC_NAMES) + len(OPTIONAL_METRICS), device=storage.device)
        batches = storage.sequence_minibatches(cfg.num_minibatches, generator)
        pending = 0
        for _index in range(cfg.num_minibatches):
            with timer.stage("minibatch_fetch"):
                batch = next(batches)
            stats = self._accumulate_gradients(batch, timer)
            pending += 1
            if pending == cfg.gradient_accumulation:
                stats[METRIC_NAMES.index("grad_norm")] = self._optimizer_step(timer)
                pending = 0
            if auxiliary_step is not None:
                with timer.stage("rnd_step"):
                    stats[METRIC_NAMES.index("auxiliary_loss")] = auxiliary_step(batch).detach() * batch.share
            sums += stats
            if on_minibatch is not None:
                with timer.stage("callbacks"):
                    on_minibatch()
        if pending:
            sums[METRIC_NAMES.index("grad_norm")] += self._optimizer_step(timer)
        optimizer_steps = -(-cfg.num_minibatches // cfg.gradient_accumulation)
        if self.all_reduce is not None:  # share-weighted sums over ranks; the clipped norm is shared
            grad_norm = sums[METRIC_NAMES.index("grad_norm")].clone()
            self.all_reduce(sums)
            sums[METRIC_NAMES.index("grad_norm")] = grad_norm
        means = (sums / cfg.num_minibatches).tolist()  # the one host copy of this epoch
        metrics = dict(zip((*METRIC_NAMES, *OPTIONAL_METRICS), means, strict=True))
        absent = {
            CHUNK_METRIC: self.policy.actor.chunk is None,
            SYMMETRY_METRIC: cfg.symmetry_coef == 0.0,
            VISIT_METRIC: self.policy.visit_head is None,
            SELF_IMITATION_METRIC: cfg.self_imitation_coef == 0.0,
            DAGGER_METRIC: self.dagger_loss is None,
        }
        for name, missing in absent.items():
            if missing:
                del metrics[name]
        metrics["grad_norm"] = metrics["grad_norm"] * cfg.num_minibatches / optimizer_steps
        return metrics

    def _accumulate_gradients(self, batch: SequenceBatch, timer: StageTimer) -> torch.Tensor:
        """Forward and backward one minibatch (scaled for accumulation); returns its stats [K]."""
        cfg = self.config
        warming_up = self.update_index < cfg.value_warmup_updates
        with timer.stage("prep"):
            old_log_probs, advantages = batch.old_log_probs.reshape(-1), batch.advantages.reshape(-1)
        with timer.stage("policy_eval"):
            evaluation = self._evaluate(batch, self.evaluate)
            log_probs = evaluation.log_prob.reshape(-1)
            proximal = None if batch.proximal_log_probs is None else batch.proximal_log_probs.reshape(-1)
            policy_loss, clip_fraction, approx_kl = clipped_surrogate_loss(
                log_probs, old_log_probs, advantages, cfg.clip_range, proximal
            )
            value_loss = clipped_value_loss(
                evaluation.value.reshape(-1),
                batch.old_values.reshape(-1),
                batch.returns.reshape(-1),
                cfg.value_clip_range,
            )
            entropy = evaluation.entropy.mean()
            reference_kl = self._reference_kl(batch, log_probs)
            optional = self._optional_losses(batch, evaluation, advantages, warming_up)
            # the critic and the self-supervised heads learn from the first update (no warm-up)
            loss = cfg.value_coef * value_loss + cfg.chunk_coef * optional[CHUNK_METRIC]
            loss = loss + cfg.visit_prediction_coef * optional[VISIT_METRIC]
            if not warming_up:
                loss = loss + policy_loss - cfg.entropy_coef * entropy
                loss = loss + cfg.symmetry_coef * optional[SYMMETRY_METRIC]
                loss = loss + cfg.self_imitation_coef * optional[SELF_IMITATION_METRIC]
                loss = loss + cfg.dagger_coef * optional[DAGGER_METRIC]
                loss = loss + self.reference_kl_coef() * reference_kl
        with timer.stage("backward"):
            # A data-parallel rank's loss, weighted by its share of the minibatch, times the ranks
            # DDP averages over: the averaged gradient is the whole minibatch's (1.0 x 1 alone).
            (loss * (batch.share * self.ranks) / cfg.gradient_accumulation).backward()
        zero = torch.zeros((), device=loss.device)
        required = [policy_loss.detach(), value_loss.detach(), entropy.detach(), approx_kl, clip_fraction]
        required += [reference_kl.detach(), zero, zero]  # grad_norm and auxiliary_loss: filled by the epoch
        return batch.share * torch.stack(required + [optional[name].detach() for name in OPTIONAL_METRICS])

    def _optional_losses(
        self, batch: SequenceBatch, evaluation: SequenceEval, advantages: torch.Tensor, warming_up: bool
    ) -> dict[str, torch.Tensor]:
        """The loss terms only some configurations use, by metric name (a zero where one is off)."""
        cfg = self.config
        zero = torch.zeros((), device=advantages.device)
        losses = dict.fromkeys(OPTIONAL_METRICS, zero)
        if evaluation.later_means is not None:
            # targets: the policy's own later mean actions along this rollout sequence (detached)
            losses[CHUNK_METRIC] = chunk_prediction_loss(
                evaluation.later_means, evaluation.action_mean.detach(), batch.episode_starts
            )
        if evaluation.visit_logits is not None:
            assert batch.visit_features is not None, "a visit head needs the rollout's visit features"
            losses[VISIT_METRIC] = visit_prediction_loss(evaluation.visit_logits, batch.visit_features)
        if cfg.symmetry_coef > 0.0 and batch.mirror_means is not None:
            losses[SYMMETRY_METRIC] = (evaluation.action_mean - batch.mirror_means).square().mean()
        if cfg.self_imitation_coef > 0.0:
            # an open-loop step executed an earlier tick's chunk entry, not this tick's mean: skipped
            lags = self._lags(batch)
            gains = advantages if lags is None else advantages * (lags.reshape(-1) == 0)
            losses[SELF_IMITATION_METRIC] = self_imitation_loss(
                evaluation.action_mean.flatten(0, -2),
                batch.actions.flatten(0, -2),
                gains,
                self.policy.cfg.action_squash,
            )
        if self.dagger_loss is not None and not warming_up:
            losses[DAGGER_METRIC] = self.dagger_loss(self.policy)
        return losses

    def _lags(self, batch: SequenceBatch) -> torch.Tensor | None:
        """The minibatch's chunk lags when rollouts may run open loop, else None.

        Only then: evaluating with lags costs a host sync per minibatch.
        """
        return batch.lags if self.config.open_loop_fraction > 0.0 else None

    def _evaluate(self, batch: SequenceBatch, evaluate: Callable[..., SequenceEval]) -> SequenceEval:
        """Replay one minibatch's sequences as they were acted (``evaluate``: the policy's own or the
        data-parallel wrapper); open-loop actions are scored under the chunk entry they came from."""
        return evaluate(
            batch.obs,
            batch.actions,
            batch.state0,
            batch.episode_starts,
            self._lags(batch),
            loop_scores=batch.loop_scores,
            visit_features=batch.visit_features,
            noise_log_scales=batch.noise_log_scales,
        )

    def _proximal_log_probs(self, storage: RolloutStorage) -> torch.Tensor:
        """``[T, B]`` log-probabilities of the rollout's actions under the weights at this update's
        start, for a rollout older weights acted (``storage.acting_version``).

        One no-grad replay of the rollout in minibatch-sized groups (measured at about a tenth of a
        default update's time); only rollouts acted by older weights (collect-ahead, Ray workers)
        pay it.
        Each rank of a data-parallel learner replays its own columns with its own weights (no
        collective: the wrapped evaluation is not used).
        """
        proximal = torch.empty_like(storage.log_probs)
        per_batch = max(1, storage.num_sequences // self.config.num_minibatches)
        with torch.no_grad():
            for ids in torch.arange(storage.num_sequences, device=storage.device).split(per_batch):
                replay = self._evaluate(storage.gather(ids), self.policy.evaluate_sequences)
                storage.scatter(proximal, ids, replay.log_prob)
        return proximal

    def _reference_kl(self, batch: SequenceBatch, log_probs: torch.Tensor) -> torch.Tensor:
        if self.reference_policy is None or self.config.reference_kl_coef == 0.0:
            return torch.zeros((), device=log_probs.device)
        with torch.no_grad():
            reference = self.reference_policy.evaluate_sequences(
                batch.obs,
                batch.actions,
                batch.state0,
                batch.episode_starts,
                loop_scores=batch.loop_scores,
                visit_features=batch.visit_features,
            )
        return kl_to_reference(log_probs, reference.log_prob.reshape(-1))

    def _optimizer_step(self, timer: StageTimer) -> torch.Tensor:
        with timer.stage("clip"):
            parameters: list[nn.Parameter] = [p for p in self.policy.parameters() if p.grad is not None]
            grad_norm = torch.nn.utils.clip_grad_norm_(parameters, self.config.max_grad_norm)
        with timer.stage("optimizer_step"):
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        return grad_norm.detach()

    def state_dict(self) -> dict[str, object]:
        """Optimiser state and the update counter (for checkpoints)."""
        return {"optimizer": self.optimizer.state_dict(), "update_index": self.update_index}

    def load_state_dict(self, state: dict[str, object]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.optimizer.load_state_dict(state["optimizer"])  # type: ignore[arg-type]
        self.update_index = int(state["update_index"])  # type: ignore[call-overload]
