"""The people a proxy serves, from the command line.

python -m claw.users add-key keys.yaml alice      # a new key for alice, printed once (the file keeps its hash)
python -m claw.users export runs/my_run alice     # her turns, samples (and adapter) as files (--out DIR)
python -m claw.users forget runs/my_run alice     # delete them from a stopped run; record that it happened
"""

from __future__ import annotations

import argparse
import json
import sys

from claw.users.data import RunIsLive, export, forget
from claw.users.keys import KeysError, add_key


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m claw.users", description=__doc__.split("\n\n")[0])
    verbs = p.add_subparsers(dest="verb", required=True)
    add = verbs.add_parser("add-key", help="make a key for a user; the keys file keeps only its SHA-256")
    add.add_argument("keys_file")
    add.add_argument("user")
    out = verbs.add_parser("export", help="write a user's data in a run directory to files")
    out.add_argument("run_dir")
    out.add_argument("user")
    out.add_argument("--out", help="where (default: <run dir>/exports/<user>)")
    gone = verbs.add_parser("forget", help="delete a user's data from a stopped run")
    gone.add_argument("run_dir")
    gone.add_argument("user")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.verb == "add-key":
            print(add_key(args.keys_file, args.user))
            print(
                f"# the key above speaks for {args.user!r}: give it to them once (it is stored nowhere); "
                f"serve with source.keys_file={args.keys_file}",
                file=sys.stderr,
            )
        elif args.verb == "export":
            where = args.out or f"{args.run_dir}/exports/{args.user}"
            print(json.dumps({"out": where, **export(args.run_dir, args.user, where)}))
        else:
            print(json.dumps(forget(args.run_dir, args.user)))
    except (KeysError, RunIsLive, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
