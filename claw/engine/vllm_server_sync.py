"""`engine=vllm_server`'s weight hand-over: `load_weights` writes the tensors to a fresh directory under the
engine's `dir` (the trainer waits only for that), and one sync thread reloads the server from the written
versions in version order, the newest of those waiting, while new `generate` calls wait and those in flight
end. Only files older than what the server now holds are ever removed (never a directory a reload is reading).
Mixed into `claw.engine.vllm_server.VLLMServerEngine`, whose client, directory and `_check` it uses."""

from __future__ import annotations

import os
import queue
import shutil
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import torch

from claw.engine.vllm_setup import unshared


class ServerWeightSync:
    """The written-versions queue, the sync thread and the counters `generate` waits on (`_cond`)."""

    def _init_sync(self) -> None:
        self._cond = threading.Condition()
        self._active = 0  # generate calls in flight
        self._sync_pending = 0  # versions written and not yet loaded (or skipped)
        self._written: queue.Queue = queue.Queue()  # (directory, version), in the order the trainer wrote them
        self._sync_thread = threading.Thread(target=self._sync_loop, name="claw-vllm-server-sync", daemon=True)
        self._sync_thread.start()

    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]], version: int) -> None:
        """Write the weights to shared storage (the trainer waits for this), then reload in the background."""
        from safetensors.torch import save_file

        self._check()
        target = self.dir / f"v{version}"
        tmp = self.dir / f".v{version}.tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        save_file(unshared(named_tensors), str(tmp / "model.safetensors"))
        (tmp / "config.json").write_text((self.dir / "v0" / "config.json").read_text())
        os.replace(tmp, target)
        with self._cond:
            self._sync_pending += 1
        self._written.put((target, version))

    def _sync_loop(self) -> None:
        """The one thread that reloads the server: versions in order, the newest of those waiting."""
        while True:
            item = self._written.get()
            if item is None:
                return
            batch = [item]
            while True:  # everything written meanwhile: only the newest is worth loading
                try:
                    nxt = self._written.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._written.put(None)
                    break
                batch.append(nxt)
            path, version = max(batch, key=lambda b: b[1])
            for skipped, v in batch:
                if v < version:
                    shutil.rmtree(skipped, ignore_errors=True)  # superseded before it was loaded: nobody reads it
            self._reload(path, version, len(batch))

    def _reload(self, path: Path, version: int, n_written: int = 1) -> None:
        with self._cond:  # new generate calls wait while `_sync_pending` counts this version; let those in flight end
            while self._active:
                self._cond.wait()
        try:  # without the lock: the trainer's next write does not wait for this reload
            if version < self.version:
                raise RuntimeError(
                    f"weights of version {version} arrived after version {self.version}; versions only go up"
                )
            t0 = time.perf_counter()
            r = self.client.post(
                "/collective_rpc", json={"method": "reload_weights", "kwargs": {"weights_path": str(path)}}
            )
            if r.status_code != 200:
                raise RuntimeError(
                    f"reload_weights from {path} answered {r.status_code}: {r.text[:300]} "
                    f"(server log: {self.log_file})"
                )
            self.client.post("/reset_prefix_cache").raise_for_status()
            self.version = version
            self.last_sync_s = time.perf_counter() - t0
        except Exception as e:  # e.g. the server died: the next generate / load_weights raises it
            self._error = e
        finally:
            with self._cond:
                self._sync_pending -= n_written
                self._cond.notify_all()
        # Older versions only (v0 holds the config and tokenizer the server started from): anything newer
        # is queued behind this thread, which is the only one that loads or removes.
        for old in self.dir.glob("v*"):
            if 0 < int(old.name[1:]) < version:
                shutil.rmtree(old, ignore_errors=True)

    def wait_synced(self, timeout: float | None = None) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: self._sync_pending == 0, timeout):
                raise TimeoutError("weights not reloaded in time")
        self._check()
