"""`engine=vllm`'s weight loads and sleep mode. Callers stage weights (`load_weights`) or ask for sleep or wake;
the engine thread applies each between requests, with nothing in flight: `_apply_staged` reloads the staged
tensors in place and resets the prefix cache, `_do_sleep` / `_do_wake` release and map back the GPU memory of
weights and KV cache. Mixed into `claw.engine.vllm.VLLMEngine`, whose engine thread and state they use."""

from __future__ import annotations

import time
from collections.abc import Iterable

import torch


class WeightSyncAndSleep:
    """Weight loads and sleep mode of `VLLMEngine` (its `_run_on_engine`, inbox, staged slot and `llm`)."""

    # -- callers ---------------------------------------------------------------------------
    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]], version: int) -> None:
        """Stage a copy of the new weights and return; the engine thread swaps them in between requests."""
        staged = {name: t.detach().clone() for name, t in named_tensors}
        with self._staged_lock:
            self._staged = (staged, version)
        self._hf_scorer.load_weights(staged.items(), version)
        self._inbox.put(None)  # wake the loop

    def wait_synced(self, timeout: float | None = None) -> None:
        """Block until staged weights are live (benchmarks and tests; training never waits)."""
        self._run_on_engine(lambda: None, timeout, after_sync=True)

    def sleep(self) -> None:
        """Release the GPU memory of weights (level 1: offloaded, 2: discarded) and KV cache.

        No-op without sleep mode."""
        if self.sleep_level:
            self._run_on_engine(self._do_sleep, after_drain=True)

    def wake(self) -> None:
        if self.sleep_level:
            self._run_on_engine(self._do_wake)

    # -- engine thread (nothing in flight) -------------------------------------------------
    def _apply_staged(self) -> None:
        with self._staged_lock:
            staged, self._staged = self._staged, None
        tensors, version = staged
        t0 = time.perf_counter()
        if self._asleep:
            self.llm.wake_up(tags=["weights"])  # load into mapped memory
        self._worker.reload_weights(weights_iterator=iter(tensors.items()))
        self.llm.reset_prefix_cache()
        self.version = version
        self.last_sync_s = time.perf_counter() - t0
        self._weights_awake = True

    def _do_sleep(self) -> None:
        if not self._asleep:
            self.llm.sleep(level=self.sleep_level)
            self._asleep = True
            self._weights_awake = False

    def _do_wake(self) -> None:
        if not self._asleep:
            return
        if not self._weights_awake:
            if self.sleep_level == 2:
                raise RuntimeError(
                    "sleep level 2 discarded the weights and none were loaded since; load_weights before wake()"
                )
            self.llm.wake_up(tags=["weights"])
        self.llm.wake_up(tags=["kv_cache"])
        self._asleep = False
