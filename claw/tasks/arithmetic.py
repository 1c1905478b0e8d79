"""Arithmetic word problems with verifiable integer answers, generated from a seed.

`python scripts/make_arithmetic.py` writes `data/arithmetic/{train,test}.jsonl`; the two splits
use disjoint templates × number draws (a problem's text never appears in both).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

NAMES = [
    "Ava", "Ben", "Chloe", "Dan", "Emma", "Finn", "Grace", "Hugo",
    "Iris", "Jack", "Lena", "Max", "Nora", "Omar", "Pia", "Sam",
]  # fmt: skip
ITEMS = ["apples", "marbles", "stickers", "books", "coins", "pencils", "cookies", "cards", "shells", "stamps"]

# (template, answer, weight). One-step problems are the majority (the embedded 135M model
# solves about a third of them greedily); two-step problems keep a harder tail.
TEMPLATES = [
    ("{n} has {a} {item}. {n} gets {b} more. How many {item} does {n} have now?", lambda a, b, c, d: a + b, 3),
    ("{n} had {a} {item} and gave away {b}. How many {item} does {n} have left?", lambda a, b, c, d: a - b, 3),
    ("{n} has {c} bags with {d} {item} in each bag. How many {item} are there in total?", lambda a, b, c, d: c * d, 2),
    (
        "There are {a} {item} on a table. {n} adds {b} and then takes away {c}. How many {item} are on the table?",
        lambda a, b, c, d: a + b - c,
        1,
    ),
    (
        "{n} earns {d} coins a day for {c} days and spends {b} coins. How many coins does {n} have left?",
        lambda a, b, c, d: c * d - b,
        1,
    ),
]


def make_problem(rng: random.Random, template_id: int) -> dict:
    text, answer, _ = TEMPLATES[template_id]
    while True:
        a, b, c, d = rng.randint(5, 40), rng.randint(2, 20), rng.randint(2, 9), rng.randint(2, 10)
        value = answer(a, b, c, d)
        if value > 0:
            break
    question = text.format(n=rng.choice(NAMES), item=rng.choice(ITEMS), a=a, b=b, c=c, d=d)
    return {"question": question, "answer": int(value), "template": template_id}


def generate(n_train: int = 2000, n_test: int = 256, seed: int = 0) -> tuple[list[dict], list[dict]]:
    rng = random.Random(seed)
    seen: set[str] = set()
    splits: dict[str, list[dict]] = {"train": [], "test": []}
    for split, n in (("test", n_test), ("train", n_train)):
        while len(splits[split]) < n:
            p = make_problem(rng, rng.choices(range(len(TEMPLATES)), weights=[t[2] for t in TEMPLATES])[0])
            if p["question"] not in seen:
                seen.add(p["question"])
                splits[split].append(p)
    return splits["train"], splits["test"]


def write(out_dir: str | Path, n_train: int = 2000, n_test: int = 256, seed: int = 0) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in zip(("train", "test"), generate(n_train, n_test, seed)):
        with open(out / f"{name}.jsonl", "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


def load(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; regenerate it with `python scripts/make_arithmetic.py`")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
# Each optional part carries its own trailing spaces: three `\s*` side by side (the earlier form) split one run of
# spaces in cubically many ways, and "answer" + 4,000 spaces took 7 minutes to fail.
_ANSWER = re.compile(
    r"answer\s*(?:(?:is|:)\s*)?(?:\$\s*)?(?:\\\s*)?(?:boxed\{\s*)?(-?\d[\d,]*(?:\.\d+)?)", re.IGNORECASE
)


def parse_answer(text: str) -> float | None:
    """The final answer: the number after the last "answer is"/"Answer:", else the last number."""
    hits = _ANSWER.findall(text)
    raw = hits[-1] if hits else (_NUMBER.findall(text) or [None])[-1]
    if raw is None:
        return None
    try:
        return float(raw.replace(",", ""))
    except ValueError:
        return None


def reward(text: str, answer: int) -> float:
    """1.0 when the parsed final answer equals the true answer, else 0.0."""
    value = parse_answer(text)
    return 1.0 if value is not None and abs(value - answer) < 1e-9 else 0.0
