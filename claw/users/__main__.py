"""The people a proxy serves, from the command line.

python -m claw.users add-key keys.yaml alice       # a new key for alice (printed once; the file keeps its hash)
"""

from __future__ import annotations

import argparse
import sys

from claw.users.keys import KeysError, add_key


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m claw.users", description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    add = verbs.add_parser("add-key", help="make a key for a user; the keys file keeps only its SHA-256")
    add.add_argument("keys_file")
    add.add_argument("user")
    args = parser.parse_args(argv)
    try:
        key = add_key(args.keys_file, args.user)
    except KeysError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(key)
    print(
        f"# the key above speaks for {args.user!r}: give it to them once (it is stored nowhere); "
        f"serve with source.keys_file={args.keys_file}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
