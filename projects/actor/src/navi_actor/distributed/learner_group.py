"""``--learners N``: the PPO update on N data-parallel ranks under Ray Train's ``TorchTrainer``.

Ray Train starts the ranks and their process group (gloo on CPU, NCCL on CUDA). Rank 0 runs the
one training loop (:class:`OnPolicyRunner`) and alone owns what must exist once: the rollout
worker pool and its versioned weights broadcast, the run folder, checkpoints (the v3 format: a
run can resume with any learner count), the registry and telemetry. Its rollout source,
:class:`ShardedRayRollouts`, gathers the workers' fragments, scatters each rank its drone columns
and folds the whole rollout into RND's statistics; the other ranks (:func:`replica_loop`) receive
their columns and run the same ``PPOLearner.update`` in lock-step (navi_actor.distributed.data_parallel).
"""

from __future__ import annotations

import functools
import json
import math
import signal
import tempfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog
import torch
import torch.distributed as dist

from navi_actor.config import ActorSettings
from navi_actor.distributed.config import DistributedConfig
from navi_actor.distributed.data_parallel import (
    ShardStorage,
    broadcast_floats,
    make_data_parallel,
    scatter_columns,
    sync_rnd,
)
from navi_actor.distributed.fragment import merge_stats, storage_fields, whole_buffers
from navi_actor.distributed.ray_source import RayRollouts
from navi_actor.distributed.worker_pool import WorkerPool
from navi_actor.registry import ModelRegistry, RegistryEntry
from navi_actor.runners.console import LineSink
from navi_actor.runners.learner_state import LearnerState
from navi_actor.runners.on_policy_runner import OnPolicyRunner, TrainSummary
from navi_actor.runners.rollout_collector import RolloutStats
from navi_actor.storage import RolloutStorage

log = structlog.get_logger()


def check_learners(settings: ActorSettings, config: DistributedConfig) -> None:
    """The rollout's drone columns must split evenly over the learner ranks."""
    columns = config.num_workers * settings.rollout.num_actors
    if columns % config.learners:
        raise ValueError(
            f"--learners {config.learners} must divide the {columns} drones of one update "
            f"({config.num_workers} workers x {settings.rollout.num_actors} actors)"
        )


class ShardedRayRollouts(RayRollouts):
    """Rank 0's rollout source: the workers' fragments, each rank given its drone columns."""

    def __init__(
        self, pool: WorkerPool, config: DistributedConfig, *, ranks: int, stop_file: Path | None = None
    ) -> None:
        super().__init__(pool, config)
        self.ranks, self.stop_file = ranks, stop_file
        self._go = False  # replicas are in the loop (a stop must be sent)

    def new_storage(self, state: LearnerState) -> RolloutStorage:
        shard = functools.partial(ShardStorage, rank=0, ranks=self.ranks)
        return state.new_storage(self.observation_shape, self.columns // self.ranks, shard)

    def start(self, runner: OnPolicyRunner) -> None:
        start = [self.observation_shape, self.corpus_summary, runner.parent_checkpoint]
        dist.broadcast_object_list(start, src=0)  # the replicas build the same learner state
        make_data_parallel(runner.state, self.ranks)
        self._go = True
        super().start(runner)

    def collect(self, gamma: float, gae_lambda: float) -> RolloutStats:
        runner = self._attached()
        storage, device = runner.storage, runner.storage.device
        if self.stop_file is not None and self.stop_file.exists():
            # The driver got Ctrl+C / SIGTERM: end as an interrupted local run does (the runner
            # writes the final checkpoint; the replicas are stopped afterwards).
            raise KeyboardInterrupt
        self._fragments = fragments = self.gather()
        # every rank replays the rollout for decoupled PPO exactly when rank 0 does
        storage.acting_version = min(fragment.version for fragment in fragments)
        broadcast_floats([1.0, gamma, gae_lambda, float(storage.acting_version)], device)
        whole, last_values = whole_buffers(fragments, device, storage_fields(storage))
        for name in storage_fields(storage):
            scatter_columns(whole[name], getattr(storage, name), 0, self.ranks)
        mine = torch.empty(storage.num_envs, device=device)
        scatter_columns(last_values, mine, 0, self.ranks)
        storage.compute_returns(mine, gamma, gae_lambda)
        # Rank 0's RND folds the whole rollout, as one learner's does; every rank gets a copy.
        runner.shaping.modules["rnd"].intrinsic_reward(whole["obs"].flatten(0, 1), update_stats=True)
        sync_rnd(runner.state)
        return merge_stats(fragments)

    def before_update(self) -> None:
        spent = self._attached().learner._time_spent  # --max-minutes: rank 0's clock rules
        broadcast_floats([math.nan if spent is None else spent], self._attached().storage.device)

    def manifest(self) -> dict[str, Any]:
        return super().manifest() | {"learners": self.ranks}

    def record(self) -> dict[str, float]:
        return super().record() | {"distributed/learners": float(self.ranks)}

    def stop_replicas(self) -> None:
        """Tell the other ranks the run is over (after rank 0's last update)."""
        if self._go:
            broadcast_floats([0.0, 0.0, 0.0, 0.0], self._attached().storage.device)
            self._go = False


def replica_loop(settings: ActorSettings, artifacts_dir: Path, rank: int, ranks: int) -> None:
    """A rank other than 0: the same learner state and updates, on the columns rank 0 scatters."""
    device = torch.device(settings.train.device)
    start: list[Any] = [None, None, None]
    dist.broadcast_object_list(start, src=0)
    observation_shape, _corpus, parent = start
    settings = settings.model_copy(
        update={"checkpoint": settings.checkpoint.model_copy(update={"auto_resume": False})}
    )
    explicit = Path(parent) if parent is not None else None
    registry = ModelRegistry(artifacts_dir / "models")  # read only with an explicit checkpoint
    state = LearnerState.build(settings, observation_shape, settings.rollout.num_actors, registry, explicit)
    columns = settings.rollout.num_actors * settings.distributed.num_workers
    total = settings.train.total_steps
    state.learner.schedule(math.ceil(total / (settings.rollout.rollout_length * columns)) if total else None)
    shard = functools.partial(ShardStorage, rank=rank, ranks=ranks)
    storage = state.new_storage(observation_shape, columns // ranks, shard)
    make_data_parallel(state, ranks)
    last_values = torch.empty(storage.num_envs, device=device)
    while True:
        go, gamma, gae_lambda, version = broadcast_floats([0.0, 0.0, 0.0, 0.0], device)
        if not go:
            return
        storage.acting_version = int(version)
        for name in storage_fields(storage):
            scatter_columns(None, getattr(storage, name), rank, ranks)
        scatter_columns(None, last_values, rank, ranks)
        storage.compute_returns(last_values, gamma, gae_lambda)
        sync_rnd(state)
        (spent,) = broadcast_floats([0.0], device)
        state.learner.set_time_spent(None if math.isnan(spent) else spent)
        state.learner.update(storage, state.shuffle, state.shaping.auxiliary_step)


def _summary_metrics(summary: TrainSummary) -> dict[str, Any]:
    """A :class:`TrainSummary` as JSON-able values (Ray Train's reported metrics)."""
    return {
        "run_id": summary.run_id,
        "run_dir": str(summary.run_dir),
        "step_id": summary.step_id,
        "steps_this_run": summary.steps_this_run,
        "updates_this_run": summary.updates_this_run,
        "interrupted": summary.interrupted,
        "final_checkpoint": None if summary.final_checkpoint is None else str(summary.final_checkpoint),
        "promoted": [entry.model_dump(mode="json") for entry in summary.promoted],
        "steps_per_second": summary.steps_per_second,
        "reward_ema": summary.reward_ema,
        "dropped_fragments": summary.dropped_fragments,
        "worker_restarts": summary.worker_restarts,
        "workers_replaced": summary.workers_replaced,
    }


def _summary_from_metrics(metrics: dict[str, Any]) -> TrainSummary:
    values = dict(metrics)
    values["run_dir"] = Path(values["run_dir"])
    final = values["final_checkpoint"]
    values["final_checkpoint"] = None if final is None else Path(final)
    values["promoted"] = [RegistryEntry.model_validate(entry) for entry in values["promoted"]]
    fields = TrainSummary.__dataclass_fields__
    return TrainSummary(**{key: value for key, value in values.items() if key in fields})


def learner_rank(loop: dict[str, Any]) -> None:
    """Ray Train's per-rank function: rank 0 trains with the worker pool, the others follow it."""
    import ray.train
    import ray.train.torch

    from navi_actor.telemetry import TrainingTelemetry

    context = ray.train.get_context()
    rank, ranks = context.get_world_rank(), context.get_world_size()
    settings: ActorSettings = loop["settings"]
    train = settings.train.model_copy(update={"device": str(ray.train.torch.get_device())})
    settings = settings.model_copy(update={"train": train})
    artifacts_dir: Path = loop["artifacts_dir"]
    if rank != 0:
        replica_loop(settings, artifacts_dir, rank, ranks)
        ray.train.report({})
        return
    config: DistributedConfig = settings.distributed
    telemetry = TrainingTelemetry(settings.telemetry) if settings.telemetry.enabled else None
    pool = WorkerPool(settings, config)
    try:
        source = ShardedRayRollouts(pool, config, ranks=ranks, stop_file=loop["stop_file"])
        runner = OnPolicyRunner(
            settings,
            source,
            artifacts_dir=artifacts_dir,
            checkpoint=loop["checkpoint"],
            telemetry=telemetry,
            progress=LineSink(functools.partial(_append_line, loop["progress_file"])),
        )
        summary = runner.run_training()
        source.stop_replicas()
    finally:
        pool.shutdown()
        if telemetry is not None:
            telemetry.close()
    # Ray Train keeps the metrics of a report that carries a checkpoint: the summary travels as one.
    metrics = _summary_metrics(summary)
    with tempfile.TemporaryDirectory(prefix="navi-summary-") as folder:
        (Path(folder) / "summary.json").write_text(json.dumps(metrics), encoding="utf-8")
        ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(folder))


def _append_line(path: Path, text: str) -> None:
    """Rank 0's words for people, for the driver to print (rank 0 may run in another process or node)."""
    with path.open("a", encoding="utf-8") as stream:
        stream.write(text + "\n")


class _Tail:
    """Complete lines appended to a file since the last read."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0

    def lines(self) -> list[str]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as stream:
            stream.seek(self.offset)
            chunk = stream.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        return complete.decode("utf-8", errors="replace").splitlines()


def _fit_until_done(
    trainer: Any, stop_file: Path, progress_file: Path, progress: Callable[[str], None] | None
) -> Any:
    """``trainer.fit()`` in a thread; Ctrl+C / SIGTERM here asks rank 0 to stop with a final checkpoint.

    Why a thread: in the main thread Ray Train answers SIGINT by aborting the ranks at once, which
    would lose the steps since the last checkpoint. The stop request is a file rank 0 checks before
    every rollout (the artifacts folder is shared with rank 0 anyway).
    """
    outcome: dict[str, Any] = {}

    done = threading.Event()  # not Thread.join: a join cut by Ctrl+C can report a live thread dead

    def fit() -> None:
        try:
            outcome["result"] = trainer.fit()
        except BaseException as error:  # re-raised in the calling thread
            outcome["error"] = error
        finally:
            done.set()

    thread = threading.Thread(target=fit, name="ray-train-fit", daemon=True)
    thread.start()
    tail = _Tail(progress_file)
    say = progress if progress is not None else (lambda line: None)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    if main:  # Ctrl+C raises here, whatever handler an earlier fit() in this process left behind
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        while not done.is_set():
            try:
                done.wait(timeout=0.5)
                for line in tail.lines():
                    say(line)
            except KeyboardInterrupt:
                stop_file.touch()
                log.info("actor.train.interrupted", stop_file=str(stop_file))
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
    for line in tail.lines():
        say(line)
    stop_file.unlink(missing_ok=True)
    progress_file.unlink(missing_ok=True)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def train_data_parallel(
    settings: ActorSettings,
    config: DistributedConfig,
    *,
    artifacts_dir: Path,
    checkpoint: Path | None,
    progress: Callable[[str], None] | None = None,
) -> TrainSummary:
    """Run ``config.learners`` learner ranks under Ray Train (Ray connected) and return rank 0's summary.

    Raises:
        ValueError: the learners do not divide the rollout's drones, or an unsupported setting.
        RuntimeError: a learner rank failed (the checkpoints written before stay valid).
    """
    from ray.train import FailureConfig, RunConfig, ScalingConfig, TrainingFailedError
    from ray.train.torch import TorchTrainer

    check_learners(settings, config)
    if settings.ppo.value_warmup_updates > 0:
        raise ValueError("ppo.value_warmup_updates > 0 needs --learners 1 (DDP all-reduces every gradient)")
    name = f"navi-learners-{uuid.uuid4().hex[:8]}"
    (artifacts_dir / "ray_train").mkdir(parents=True, exist_ok=True)
    stop_file = (artifacts_dir / "ray_train" / f"{name}.stop").resolve()
    progress_file = stop_file.with_suffix(".progress")
    resources = {"CPU": config.learner_cpus} | ({"GPU": config.learner_gpus} if config.learner_gpus else {})
    trainer = TorchTrainer(
        learner_rank,
        train_loop_config={
            "settings": settings.model_copy(update={"distributed": config}),
            "artifacts_dir": artifacts_dir.resolve(),
            "checkpoint": checkpoint.resolve() if checkpoint is not None else None,
            "stop_file": stop_file,
            "progress_file": progress_file,
        },
        scaling_config=ScalingConfig(
            num_workers=config.learners, use_gpu=config.learner_gpus > 0, resources_per_worker=resources
        ),
        run_config=RunConfig(
            name=name,
            storage_path=str((artifacts_dir / "ray_train").resolve()),
            failure_config=FailureConfig(max_failures=0),
        ),
    )
    log.info("actor.distributed.learners_starting", learners=config.learners, workers=config.num_workers)
    try:
        result = _fit_until_done(trainer, stop_file, progress_file, progress)
    except TrainingFailedError as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        ranks = [line.split()[1] for line in lines if line.startswith("[Rank ")]  # "[Rank 0 Error..."
        # The rank that failed and the first sentence of its error (its traceback's last line).
        cause = (lines[-1] if lines else type(error).__name__).split(". ")[0]
        reason = f"rank {ranks[0]}: {cause}" if ranks else cause
        raise RuntimeError(
            f"a learner rank failed ({reason}); the run stopped, and the checkpoints it wrote before "
            "stay valid: run the same command again to continue from the newest"
        ) from error
    if result.checkpoint is None:
        raise RuntimeError("the learner ranks ended without rank 0's summary (see the Ray Train logs)")
    with result.checkpoint.as_directory() as folder:
        return _summary_from_metrics(json.loads((Path(folder) / "summary.json").read_text(encoding="utf-8")))
