"""Stopping on SIGTERM / SIGINT (Ctrl-C): stop the sources, checkpoint, end the engine, exit 0.

The first signal only asks (`StopSignal.requested`); each part acts on it where it is safe to:
- the datamodule stops the sources at once, in a thread of its own (a server stops accepting and answers or cancels
  what it has in flight, the logs are fsynced), even while a step trains;
- a trainer waiting for a rollout batch stops waiting within `poll_seconds`: the wait raises `StopRequested`, which
  `PublishAndCommit.on_exception` checkpoints and train.py treats as a clean end;
- a step in progress finishes, is checkpointed, and training ends there (`PublishAndCommit.on_train_batch_end`).
`python train.py resume=<run dir>` goes on from that checkpoint.

A second signal does not ask again: it raises KeyboardInterrupt at once (Lightning's interrupt path; no checkpoint,
but the store and the ledger are crash-safe, so a resume loses at most the steps since the last checkpoint).

Why not Lightning's own handling: its SIGTERM handler only sets a flag its loop reads between batches, so a trainer
waiting for a batch that never comes (an idle proxy) never sees it; and SIGINT ends a run with exit status 1 and no
checkpoint. Lightning installs its SIGTERM handler when fit starts, so `install` is called again from
`PublishAndCommit.on_train_start` to take it back.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from types import FrameType

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopRequested(Exception):
    """Raised where the trainer waits for a rollout batch once a stop was asked for (not a failure)."""


class StopSignal:
    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal: str | None = None  # what asked: "SIGTERM", "SIGINT", or a reason given to `request`
        self._previous: dict[int, object] = {}

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def request(self, reason: str) -> None:
        """Ask for a stop (what the handler does; also for callers without a signal)."""
        if not self._event.is_set():
            self.signal = reason
            self._event.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)

    def install(self) -> None:
        """Handle SIGTERM and SIGINT from now on (main thread only; elsewhere a no-op). Idempotent; `restore` puts
        back what was there before the first call."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in SIGNALS:
            previous = signal.signal(sig, self._handle)
            self._previous.setdefault(sig, previous)

    def restore(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, previous in self._previous.items():
            signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
        self._previous = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self._event.is_set():
            _say(f"[claw] {name} again: stopping now, without a checkpoint\n")
            raise KeyboardInterrupt
        self.request(name)
        # os.write, not print: a handler runs between two bytecodes of the main thread, which may be inside a print
        _say(
            f"[claw] {name}: stopping (sources stop now; the step in progress, if any, finishes and is checkpointed); "
            "send it again to stop at once\n"
        )


def _say(text: str) -> None:
    try:
        os.write(2, text.encode())
    except OSError:
        pass


def fsync_files(*paths: str | Path) -> None:
    """Put on disk what was written to these files (through any descriptor: fsync syncs the file, not the descriptor).
    The logs flush every line as they append it; this makes the lines durable too (with `fsync=false` they are not)."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
