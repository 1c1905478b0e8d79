"""claw.engine.watchdog: what a run leaves behind when it is killed outright (real processes, no mocks)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from claw.engine.watchdog import pid_alive, scratch_dir, watched_command

# A command that spawns a grandchild in its group (as vLLM's API server spawns its engine core) and
# reports both pids, then waits forever.
SERVER = textwrap.dedent(
    """
    import subprocess, sys, time
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print("pids", __import__("os").getpid(), grandchild.pid, flush=True)
    time.sleep(600)
    """
)


def _owner(tmp_path, remove):
    """A stand-in for the trainer: starts SERVER through the watcher, prints the pids, then waits."""
    code = textwrap.dedent(
        f"""
        import os, subprocess, sys, time
        from claw.engine.watchdog import watched_command
        cmd = watched_command(
            [sys.executable, "-c", {SERVER!r}], parent=os.getpid(), remove={str(remove)!r}, grace_s=2.0
        )
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
        print("watcher", proc.pid, proc.stdout.readline().strip(), flush=True)
        time.sleep(600)
        """
    )
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    line = owner.stdout.readline().split()  # "watcher W pids S G"
    assert line[:1] == ["watcher"], line
    return owner, [int(line[1]), int(line[3]), int(line[4])]


def test_a_killed_owner_takes_its_server_and_scratch_with_it(tmp_path):
    scratch = tmp_path / "weights"
    scratch.mkdir()
    (scratch / "model.safetensors").write_bytes(b"0" * 1024)
    owner, pids = _owner(tmp_path, scratch)
    procs = [psutil.Process(p) for p in pids]
    assert all(p.is_running() for p in procs)
    owner.send_signal(signal.SIGKILL)  # no finally, no atexit: only the watcher can clean up
    owner.wait()
    gone, alive = psutil.wait_procs(procs, timeout=15)
    assert not alive, f"still running after the owner was killed: {alive}"
    assert not scratch.exists()


def test_sigterm_to_the_watcher_stops_the_group_and_keeps_the_scratch(tmp_path):
    """The owner's close(): the server and what it spawned stop; the owner removes its own files."""
    scratch = tmp_path / "weights"
    scratch.mkdir()
    proc = subprocess.Popen(
        watched_command([sys.executable, "-c", SERVER], parent=os.getpid(), remove=scratch, grace_s=2.0),
        stdout=subprocess.PIPE,
        text=True,
    )
    _, server, grandchild = proc.stdout.readline().split()
    procs = [psutil.Process(int(server)), psutil.Process(int(grandchild))]
    proc.terminate()
    assert proc.wait(15) == 128 + signal.SIGTERM  # how the server ended, passed on as a shell would
    gone, alive = psutil.wait_procs(procs, timeout=5)
    assert not alive
    assert scratch.exists()


def test_the_watcher_exits_with_its_commands_code():
    cmd = watched_command([sys.executable, "-c", "import sys; sys.exit(3)"], parent=os.getpid())
    assert subprocess.run(cmd, timeout=30).returncode == 3
    with pytest.raises(subprocess.CalledProcessError):  # no command: a usage error, not a hang
        subprocess.run(
            [sys.executable, "-m", "claw.engine.watchdog", "--parent", str(os.getpid())],
            check=True,
            capture_output=True,
            timeout=30,
        )


def test_scratch_dir_removes_only_dead_owners_directories(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    while pid_alive(dead.pid):  # reaped above; the pid is free unless reused at once
        time.sleep(0.01)
    stale = tmp_path / f"claw-vllm-{dead.pid}-abc"
    live = tmp_path / f"claw-vllm-{os.getppid()}-def"  # the test runner's parent: alive
    other = tmp_path / "claw-vllm-notapid"
    for d in (stale, live, other):
        d.mkdir()
    mine = scratch_dir("claw-vllm-", tmp_path)
    assert mine.name.startswith(f"claw-vllm-{os.getpid()}-") and mine.is_dir()
    assert not stale.exists() and live.exists() and other.exists()
    again = scratch_dir("claw-vllm-", tmp_path)  # my own earlier directory is not stale
    assert mine.exists() and again != mine
