"""Regenerate the arithmetic prompt set shipped in data/arithmetic (seeded, deterministic).

python scripts/make_arithmetic.py [--seed 0] [--train 2000] [--test 256]
"""

import argparse
from pathlib import Path

from claw.tasks.arithmetic import write

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train", type=int, default=2000)
    ap.add_argument("--test", type=int, default=256)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "data" / "arithmetic"))
    a = ap.parse_args()
    write(a.out, a.train, a.test, a.seed)
    print(f"wrote {a.out}/train.jsonl ({a.train}) and test.jsonl ({a.test})")
