"""Regenerate the review-sentiment prompt set shipped in data/review_sentiment (seeded, deterministic).

python scripts/make_review_sentiment.py [--seed 0] [--test-phrases 5]
"""

import argparse
from pathlib import Path

from claw.tasks.review_sentiment import generate, write

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--test-phrases", type=int, default=5, help="phrases of each label held out for the test split")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "data" / "review_sentiment"))
    a = ap.parse_args()
    write(a.out, a.test_phrases, a.seed)
    train, test = generate(a.test_phrases, a.seed)
    print(f"wrote {a.out}/train.jsonl ({len(train)}) and test.jsonl ({len(test)})")
