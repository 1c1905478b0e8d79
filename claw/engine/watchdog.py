"""What an engine leaves behind when the trainer dies without cleaning up (SIGKILL, the OOM killer).

Two things outlive such a death: the weights an engine writes for vLLM (hundreds of MB to GB, in
RAM-backed /dev/shm by default) and, in the split layout, the vLLM server claw started in its own
process group. Both are handled here:

- `scratch_dir(prefix, root)` makes the directory `<root>/<prefix><pid>-<random>` and first removes
  the siblings whose owner process is gone, so a crash costs memory only until the next start.
- `python -m claw.engine.watchdog --parent PID [--remove DIR] -- CMD...` runs CMD in a process
  group of its own and watches PID: when PID is gone it stops that group (SIGTERM, then SIGKILL
  after `--grace` seconds) and removes DIR. A SIGTERM or SIGINT it receives stops the group the
  same way (that is how the owner closes it); it exits with CMD's code (128 + N for a signal N).
  The split layout starts its server through it, so a trainer killed with SIGKILL does not leave
  a server holding its devices.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


def scratch_dir(prefix: str, root: str | Path | None = None) -> Path:
    """A new directory `<root>/<prefix><pid>-<random>`, after removing those of dead owners."""
    root = Path(root) if root is not None else Path(tempfile.gettempdir())
    root.mkdir(parents=True, exist_ok=True)
    pattern = re.compile(re.escape(prefix) + r"(\d+)-")
    for old in root.glob(f"{prefix}*"):
        m = pattern.match(old.name)
        if m and int(m.group(1)) != os.getpid() and not pid_alive(int(m.group(1))):
            shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=root))


def watched_command(cmd: list[str], parent: int, remove: Path | None = None, grace_s: float = 20.0) -> list[str]:
    """`cmd` wrapped so that it is stopped (and `remove` deleted) when process `parent` dies."""
    return [
        sys.executable, str(Path(__file__).resolve()),  # by path: `-m` would import claw.engine, hence torch (5 s)
        "--parent", str(parent), "--grace", str(grace_s),
        *(["--remove", str(remove)] if remove is not None else []),
        "--", *cmd,
    ]  # fmt: skip


def _stop_group(child: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM to the child's process group, SIGKILL to what is left of it after `grace_s`."""
    try:
        os.killpg(child.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        child.wait(grace_s)
    except subprocess.TimeoutExpired:
        pass
    try:  # the engine core and anything else the command spawned
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run a command; stop its process group when --parent is gone.")
    ap.add_argument("--parent", type=int, required=True, help="stop everything when this process is gone")
    ap.add_argument("--remove", type=Path, help="a directory to delete after the parent died")
    ap.add_argument("--grace", type=float, default=20.0, help="seconds between SIGTERM and SIGKILL")
    ap.add_argument("--poll", type=float, default=1.0)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        ap.error("no command given after --")
    child = subprocess.Popen(cmd, process_group=0)  # a group of its own: what it spawns is stopped with it
    asked: list[int] = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda s, _f: asked.append(s))
    while child.poll() is None:
        if asked:  # the owner's close(): stop the command and report how it ended
            _stop_group(child, args.grace)
            return _exit_code(child.returncode)
        if os.getppid() != args.parent or not pid_alive(args.parent):  # reparented: the owner died
            print(
                f"claw.engine.watchdog: process {args.parent} is gone; stopping {cmd[0]} and its process group",
                file=sys.stderr,
                flush=True,
            )
            _stop_group(child, args.grace)
            if args.remove is not None:
                shutil.rmtree(args.remove, ignore_errors=True)
            return 1
        time.sleep(args.poll)
    return _exit_code(child.returncode)


def _exit_code(returncode: int) -> int:
    return returncode if returncode >= 0 else 128 - returncode  # killed by signal N: 128 + N, as a shell says


if __name__ == "__main__":
    sys.exit(main())
