"""Short reviews labelled positive or negative: a text-answer task, checked by a regex.

`python scripts/make_review_sentiment.py` writes `data/review_sentiment/{train,test}.jsonl`. Each row
is `{"review": "The coffee made my day.", "label": "positive"}` (the answer column is `label`). The
experiment (`conf/experiment/grpo_review_sentiment.yaml`) asks "positive or negative?" and rewards
the reply when the **first** of the two labels it says is the right one, so hedging ("positive or
negative") earns nothing it would not earn by committing. The splits use disjoint phrases: no test
review's wording is seen in training. Measured with the experiment's prompt on the first 48 test
reviews, the embedded SmolLM2 (Q4_1) names the right label first 0.79 of the time greedily (95% CI
[0.66, 0.88]): signal from the start, room to learn.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SUBJECTS = [
    "The pizza", "This blender", "The hotel room", "The phone", "Our waiter", "The new sofa", "The movie", "This book",
    "The concert", "The haircut", "The delivery service", "This laptop", "The museum tour", "The coffee",
    "The rental car", "The yoga class",
]  # fmt: skip
PHRASES = {
    "positive": [
        "was excellent", "was worth every penny", "made my day", "exceeded my expectations",
        "was a pleasant surprise",
        "is the best I have tried", "left me very happy", "was better than I hoped",
        "deserves five stars", "was simply wonderful",
        "impressed my whole family", "was fantastic from start to finish", "is something I would recommend to anyone",
        "was a real delight", "was perfect", "made me smile", "was great value",
        "is absolutely lovely", "was superb", "won me over",
    ],
    "negative": [
        "was terrible", "was a waste of money", "ruined my evening", "fell far short of my expectations",
        "was a huge disappointment",
        "is the worst I have tried", "left me very annoyed", "was worse than I feared",
        "deserves zero stars", "was simply awful",
        "upset my whole family", "was dreadful from start to finish", "is something I would warn anyone about",
        "was a real letdown", "was broken", "made me angry", "was poor value",
        "is absolutely horrible", "was unacceptable", "let me down",
    ],
}  # fmt: skip


def generate(n_test_phrases: int = 5, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(train, test): every subject with every phrase; `n_test_phrases` phrases of each label are held out."""
    rng = random.Random(seed)
    splits: dict[str, list[dict]] = {"train": [], "test": []}
    for label, phrases in PHRASES.items():
        shuffled = rng.sample(phrases, len(phrases))
        for split, chosen in (("test", shuffled[:n_test_phrases]), ("train", shuffled[n_test_phrases:])):
            splits[split] += [
                {"review": f"{subject} {phrase}.", "label": label} for subject in SUBJECTS for phrase in chosen
            ]
    for rows in splits.values():
        rng.shuffle(rows)
    return splits["train"], splits["test"]


def write(out_dir: str | Path, n_test_phrases: int = 5, seed: int = 0) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in zip(("train", "test"), generate(n_test_phrases, seed)):
        with open(out / f"{name}.jsonl", "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
