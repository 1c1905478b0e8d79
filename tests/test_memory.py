"""claw.memory: freed heap goes back to the OS, and the resident size is read from /proc."""

import json
import subprocess
import sys
import textwrap

import pytest

from claw.memory import _libc, rss_gb

linux_glibc = pytest.mark.skipif(sys.platform != "linux" or _libc() is None, reason="needs Linux with glibc")

# In a fresh interpreter, so the heap's state is this script's alone: 375 MiB of 60 KiB blocks from the heap
# (not mmap), touched, then freed. They stay resident after free (0.38 -> 0.35 GiB when measured) until
# release_freed_memory hands the pages back (-> 0.01 GiB).
SCENARIO = textwrap.dedent(
    """
    import ctypes, json
    from claw.memory import release_freed_memory, rss_gb
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    libc.mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD: these blocks come from the heap
    blocks = [libc.malloc(60 * 1024) for _ in range(6400)]
    for p in blocks:
        ctypes.memset(p, 1, 60 * 1024)
    held = rss_gb()
    for p in reversed(blocks[1:]):
        libc.free(p)
    freed = rss_gb()
    released = release_freed_memory()
    print(json.dumps({"held": held, "freed": freed, "after": rss_gb(), "released": released}))
    """
)


@linux_glibc
def test_release_returns_the_heap_that_freed_blocks_leave_behind():
    out = subprocess.run([sys.executable, "-c", SCENARIO], capture_output=True, text=True, check=True, timeout=120)
    m = json.loads(out.stdout.strip().splitlines()[-1])
    assert m["released"] is True
    assert m["held"] > 0.3, m  # the blocks were resident
    assert m["after"] < m["freed"] - 0.2, m  # and release, not free, gave them back


@linux_glibc
def test_rss_is_the_processes_resident_size():
    rss = rss_gb()
    assert rss is not None and 0.01 < rss < 64
