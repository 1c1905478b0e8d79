"""Host memory: what the process holds, and handing freed heap back to the OS.

A training step frees gigabytes of logits and activations, but glibc keeps freed memory in its arenas (one
per thread: the trainer, the engine, the proxy, the checkpoint writer), so the process's resident size
climbs over the steps of a run although the live tensors do not. `release_freed_memory` asks glibc to
return it (`malloc_trim(0)`): nothing live moves, so no number a run computes changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os


@functools.cache
def _libc():
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        return libc if hasattr(libc, "malloc_trim") else None  # glibc only (musl, macOS: none)
    except OSError:
        return None


def release_freed_memory() -> bool:
    """Return the heap that freed allocations left in glibc's arenas to the OS. False where there is no glibc."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def rss_gb() -> float | None:
    """The process's resident set now, in GiB (Linux /proc; None elsewhere). `ru_maxrss` is its peak."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**30
