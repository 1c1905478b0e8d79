"""`python -m claw.rollback <run dir> --to-version N`: serve promoted version N of a guarded run again.

Needs a run trained with a guard (`guard=ope`): claw/checkpoint.py keeps only `last.ckpt` (the
trainer's newest weights), so the guard keeps the weights of its last `guard.keep_promoted`
promoted versions as safetensors under `<run dir>/guard/`; those are the versions one can roll
back to. Without `--to-version` it prints what is served and what is kept.

The rollback is a request file (`guard/rollback_request.json`): the running trainer applies it at
its next rollout batch (before pushing anything), or, for a stopped run, `python train.py
resume=<run dir>` applies it before serving. Either way it is logged in `guard.jsonl` as a manual
rollback, and the trainer restarts from those weights when `guard.after_rollback=reset`. The proxy's
`POST /admin/rollback {"to_version": N}` (API key required) makes the same request
(`claw.guard.state.request_rollback`).
"""

from __future__ import annotations

import argparse
import sys

from claw.guard.state import NO_GUARD, REQUESTED, UNKNOWN_VERSION, GuardDir, request_rollback


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m claw.rollback", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="the run directory (runs/<date>/<time>)")
    parser.add_argument("--to-version", type=int, default=None, help="a kept promoted version to serve again")
    args = parser.parse_args(argv)
    guard = GuardDir(args.run_dir)
    state = guard.load()
    if args.to_version is None:
        if state is None:
            sys.exit(
                f"{args.run_dir}: no guard/served.json; only runs trained with a guard (guard=ope) can be rolled back"
            )
        kept = [p.version for p in state.promoted if (guard.path / p.file).exists()]
        print(f"serving version {state.version} (engine label {state.engine_version}); promoted versions kept: {kept}")
        return 0
    outcome, message = request_rollback(args.run_dir, args.to_version)
    if outcome in (NO_GUARD, UNKNOWN_VERSION):
        sys.exit(message)
    if outcome == REQUESTED:
        message += f"; for a stopped run, `python train.py resume={args.run_dir}` applies it before serving"
    print(message)
    return 0


if __name__ == "__main__":
    sys.exit(main())
