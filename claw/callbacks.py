"""Callbacks: the glue between the trainer and the rest (engine, queue, evaluation, checkpoints).

Order matters at the end of each rollout batch and is fixed by `PublishAndCommit`:
  1. bump `policy_version`, record the number the engine will serve durably (claw/versions.py), push
     the new weights to the engine under it (once per rollout batch);
  2. record the batch as trained in the ledger and advance the queue cursor;
  3. write the checkpoint atomically (temp file + rename), so weights, optimizer, version and
     cursor are always saved together;
  4. stop once `steps` rollout batches are trained, once the sources have run out, or once a stop was asked
     for (SIGTERM / SIGINT, claw/shutdown.py): then the last step is checkpointed whatever `checkpoint_every`
     says. A stop asked for while the trainer waits for a batch ends the wait with `StopRequested`;
     `on_exception` checkpoints then.
"""

from __future__ import annotations

import json
import logging
import resource
import time
from pathlib import Path

import lightning as L

from claw.checkpoint import last_checkpoint
from claw.engine.base import BASE
from claw.fsdp import is_sharded
from claw.memory import release_freed_memory, rss_gb
from claw.rollout.source import Evaluates, Source
from claw.shutdown import StopRequested, StopSignal
from claw.versions import VersionLog, restart_version

log = logging.getLogger(__name__)


def sync_weights(module, engine, version: int | None = None) -> float:
    """Copy the trainer's weights into the engine under `version` (default: the module's). Returns seconds.
    (No engine: a follower rank, which has nothing to load; under FSDP it still takes part in each parameter's
    gather, claw/fsdp.py.)"""
    t0 = time.perf_counter()
    weights = ((n, t.detach()) for n, t in module.engine_weights())
    if engine is None:
        if is_sharded(module.model):
            for _ in weights:
                pass
        return 0.0
    version = module.policy_version if version is None else version
    engine.load_weights(weights, version=version)
    return time.perf_counter() - t0


def publish_adapter(adapters, engine, user: str) -> float:
    """The user's adapter after their batch, written as its next version and served from now on. Returns seconds."""
    t0 = time.perf_counter()
    version, path = adapters.promote(user)
    if engine is not None:
        engine.serve_adapter(user, version, str(path))
    return time.perf_counter() - t0


class PublishAndCommit(L.Callback):
    def __init__(
        self,
        engine,
        run_dir: str | Path,
        steps: int,
        checkpoint_every: int = 1,
        checkpoint_interval_s: float = 0.0,
        guard=None,
        release_memory: bool = True,
        stop_signal: StopSignal | None = None,
        adapters=None,
    ) -> None:
        self.engine = engine
        self.adapters = adapters  # personalize=per_user: each batch promotes its user's adapter, the base never moves
        self.stop_signal = stop_signal
        self.release_memory = release_memory  # hand freed heap back to the OS after each step (claw/memory.py)
        self.guard = guard  # claw/guard: when set, it decides what the engine serves (GuardCallback.publish)
        self.ckpt_path = last_checkpoint(run_dir)
        self.steps = steps
        self.checkpoint_every = checkpoint_every
        self.checkpoint_interval_s = checkpoint_interval_s
        self._t_last = self._t_saved = time.perf_counter()
        self._saved_version: int | None = None  # the policy_version the checkpoint on disk holds (None: no checkpoint)
        # The policy_version the engine serves (the clock's `served`), which no other weights of this run
        # directory ever had (claw/versions.py). With a guard, the guard labels what the engine serves instead.
        self._restored_served: int | None = None  # from the checkpoint, applied to the clock at fit start
        self._clock = None  # the module's PolicyClock, from fit start
        self.versions = (
            VersionLog(Path(run_dir) / "policy_versions.jsonl")
            if engine is not None and guard is None and adapters is None
            else None
        )

    def state_dict(self) -> dict:
        return {"policy_version": self._clock.served if self._clock is not None else self._restored_served}

    def load_state_dict(self, state: dict) -> None:
        self._restored_served = state.get("policy_version")

    def on_fit_start(self, trainer, module) -> None:
        # After a restart the engine must serve the restored weights, under a number no other weights had.
        # (on_fit_start runs after the checkpoint restored the module and this callback, before any rollout.)
        clock = self._clock = module.clock
        self._saved_version = module.policy_version if self.ckpt_path.exists() else None  # what fit resumed from
        restored = self._restored_served
        checkpointed = module.policy_version if restored is None else restored  # older checkpoints: equal
        clock.served = checkpointed
        if self.guard is not None:  # a guard's on_fit_start serves the promoted version
            return
        if self.adapters is not None:  # the base is as loaded; each user's restored adapter is served
            self.engine.serve_adapter(BASE, 0, str(self.adapters.base_path()))
            for user, version, path in self.adapters.served():
                self.engine.serve_adapter(user, version, str(path))
            return
        if self.versions is not None:
            clock.served = restart_version(checkpointed, self.versions.highest())
            if clock.served != checkpointed:
                self.versions.issue(clock.served, module.policy_version)
                log.warning(
                    "policy versions %d..%d were served but lost with the crash; "
                    "the restored weights are served as %d",
                    checkpointed + 1,
                    clock.served - 1,
                    clock.served,
                )
        if trainer.strategy.broadcast(clock.served > 0):  # rank 0's word: under FSDP every rank joins the sync
            sync_weights(module, self.engine, clock.served)

    def on_train_start(self, trainer, module) -> None:
        if self.stop_signal is not None:
            self.stop_signal.install()  # Lightning put its own SIGTERM handler in as fit started: take it back
        if module.policy_version >= self.steps:
            trainer.should_stop = True

    def on_before_backward(self, trainer, module, loss) -> None:
        # Colocated vLLM with sleep mode (layout=colocate): free its GPU memory for backward and the
        # optimizer step; new generations wait until `wake` below. A no-op for every other engine.
        if self.engine is not None:
            self.engine.sleep()

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        if batch is None or not trainer.datamodule.is_new(batch):
            # The stream ended inside training_step (every source exhausted): Lightning still calls the batch-end
            # hooks, with the batch it handed out before (or None). Nothing was trained: no version, no ledger line;
            # the last step is checkpointed, as at `steps` (every rank is here: the leader's END reached them all).
            if self._saved_version != module.policy_version:
                self._save(trainer, module)
            trainer.should_stop = True
            return
        clock = module.clock
        clock.advance()
        if self.guard is not None:  # claw/guard: the candidate is checked; the engine may keep the promoted version
            sync_s = self.guard.publish(trainer, module, batch)
        elif self.adapters is not None:
            sync_s = publish_adapter(self.adapters, self.engine, batch.meta["user"])
        else:
            if self.versions is not None:
                self.versions.issue(clock.served, clock.trained)  # durable before any sample can carry it
            sync_s = sync_weights(module, self.engine, clock.served)
        if self.engine is not None:
            self.engine.wake()  # weights were woken and loaded by the sync; this brings back the KV cache
        trainer.datamodule.commit(module.policy_version, batch)
        done = module.policy_version >= self.steps
        due = (
            module.policy_version % self.checkpoint_every == 0
            and time.perf_counter() - self._t_saved >= self.checkpoint_interval_s
        )
        asked = self.stop_signal is not None and self.stop_signal.requested
        # rank 0's clock and signal decide: every rank must join the save and stop at the same step
        save, stopping = trainer.strategy.broadcast((done or due or asked, asked))
        if save:
            self._save(trainer, module)
        release_s = 0.0
        if self.release_memory:
            t0 = time.perf_counter()
            release_freed_memory()
            release_s = time.perf_counter() - t0
        now = time.perf_counter()
        step_s, self._t_last = now - self._t_last, now
        n_tokens = float(batch.attention_mask.sum())  # prompt + response tokens forwarded
        module.log_dict(
            {
                "engine/sync_s": sync_s,
                "engine/version": float(clock.served if self.guard is None else clock.trained),
                "system/step_s": step_s,
                "system/tokens_per_s": n_tokens / max(step_s, 1e-9),
                "system/peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,  # Linux: KiB
                "system/release_s": release_s,
                **({"system/rss_gb": rss} if (rss := rss_gb()) is not None else {}),
            },
            on_step=True,
            batch_size=batch.size,
        )
        module.log("tok/s", n_tokens / max(step_s, 1e-9), prog_bar=True, logger=False, batch_size=batch.size)
        if stopping:
            self._report_stop(trainer, module)
        if done or stopping:
            trainer.should_stop = True

    def on_exception(self, trainer, module, exception: BaseException) -> None:
        # A stop while the trainer waited for a batch (claw/shutdown.py): checkpoint what was trained since the last
        # save, as at the end of a step (every rank gets here: the leader's STOP reached them all).
        if isinstance(exception, StopRequested):
            if self._saved_version != module.policy_version:
                self._save(trainer, module)
            self._report_stop(trainer, module)

    def _report_stop(self, trainer, module) -> None:
        if self.stop_signal is not None and trainer.is_global_zero:
            print(
                f"[claw] stopped ({self.stop_signal.signal}) at policy version {module.policy_version}, checkpointed; "
                f"go on with: python train.py resume={self.ckpt_path.parent.parent}",
                flush=True,
            )

    def _save(self, trainer, module) -> None:
        save_atomic(trainer, self.ckpt_path)
        self._t_saved = time.perf_counter()
        self._saved_version = module.policy_version

    def teardown(self, trainer, module, stage: str) -> None:
        if self.versions is not None:  # every version number it issued is on disk; the file is done with
            self.versions.close()


def save_atomic(trainer: L.Trainer, path: Path) -> None:
    """Every rank calls it (Lightning gathers state and synchronises); rank 0 writes. Atomic (and,
    with `checkpoint_async`, in the background) through the trainer's `AtomicCheckpointIO`."""
    trainer.save_checkpoint(path)


class HeldOutEval(L.Callback):
    """Held-out accuracy before training (fresh runs), every `every` steps, and after training. A source without
    a held-out set (not `Evaluates`, claw/rollout/source.py) and a DDP follower rank (no source) rate nothing."""

    def __init__(
        self, source: Source | None, run_dir: str | Path, every: int = 0, stop_signal: StopSignal | None = None
    ) -> None:
        self.source = source
        self.stop_signal = stop_signal  # a stopped run is not finished: its "after" comes when a resume finishes it
        self.path = Path(run_dir) / "eval.json"
        self.every = every
        self.results: dict = json.loads(self.path.read_text()) if self.path.exists() else {}

    def _run(self, trainer, module, tag: str):
        if not isinstance(self.source, Evaluates):  # no held-out set, or a DDP follower rank: rank 0 evaluates
            return None
        t0 = time.perf_counter()
        result = self.source.evaluate()
        self.results[tag] = result.to_json()
        self.path.write_text(json.dumps(self.results, indent=1))
        if trainer.logger is not None:
            trainer.logger.log_metrics(result.metrics(), step=module.policy_version)
        print(
            f"[claw] eval {tag} (policy version {module.policy_version}): {result.summary()} "
            f"in {time.perf_counter() - t0:.0f}s",
            flush=True,
        )
        return result

    def on_fit_start(self, trainer, module) -> None:
        self.t_start = time.perf_counter()
        # Before the data loader's first fetch starts the sources: the engine is all ours.
        if "before" not in self.results and not self._stopping():
            self._run(trainer, module, "before")

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        if self.every and module.policy_version % self.every == 0 and not trainer.should_stop:
            self._run(trainer, module, f"step_{module.policy_version}")

    def _stopping(self) -> bool:
        return self.stop_signal is not None and self.stop_signal.requested

    def on_train_end(self, trainer, module) -> None:
        if self._stopping():
            return
        after = self._run(trainer, module, "after")
        before = self.results.get("before")
        if before and after is not None:
            text, stats = after.report(before, module.policy_version, time.perf_counter() - self.t_start)
            self.results.update(stats)
            self.path.write_text(json.dumps(self.results, indent=1))
            print(text, flush=True)
