"""Seeded arithmetic word problems for the simulated users (GSM8K-style, one or two steps).

Each task is a dict ``{id, question, answer (int), kind}``. The split a problem belongs to is a
function of the set of numbers it states (a hash bucket), not of the seed or the wording, so train
and eval are disjoint for *any* pair of seeds, by their numbers: no evaluation problem has the
number set of a training problem. Same (split, n, seed, params) → same tasks, in the same order.

Numbers are kept small on purpose (single-digit factors; the range is wide enough that a quarter of the
number sets, the evaluation's, still give the evaluation about ten distinct products): the embedded 135M model
must get the answer right often enough that "the answer stays correct" is a criterion it can keep while it
learns a style, rather than one it never meets. Measured (SmolLM2-135M Q4_1, T=0.7, 96 tokens, 12 each): small
products ("4 pens at $3") 5/12 correct; single-digit sums 3/12; two-digit sums 1/12;
subtractions 0/12 — so the student persona uses the multiplication kinds.

`graded_solutions` builds the teacher persona's tasks on top: a worked student solution that is
right or carries one arithmetic slip, for the agent to comment on.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable

from claw.tasks import arithmetic

NAMES = [*arithmetic.NAMES, "Tara", "Yusuf"]  # the arithmetic set's names and two more
ITEMS = ["apples", "pencils", "stickers", "cookies", "marbles", "cards", "shells", "books", "eggs", "balloons"]
SNACKS = [
    ("apple", "apples"),
    ("pen", "pens"),
    ("notebook", "notebooks"),
    ("muffin", "muffins"),
    ("ticket", "tickets"),
    ("toy car", "toy cars"),
]

EVAL_BUCKETS = 4  # one problem text in four (by hash) is held out for evaluation
SPLITS = ("train", "eval")

# A problem maker draws its numbers from `rng` and returns (question, answer, steps, working).
# `working` is the worked solution as arithmetic lines ("3 × 4 = 12"): the teacher's tasks use it.
Problem = tuple[str, int, int, list[str]]


def _shopping(rng: random.Random) -> Problem:
    n, (one, many) = rng.choice(NAMES), rng.choice(SNACKS)
    count, price = rng.randint(2, 9), rng.randint(2, 9)
    total = count * price
    return (
        f"{n} buys {count} {many}. Each {one} costs ${price}. How many dollars does {n} spend?",
        total,
        1,
        [f"{count} × {price} = {total}"],
    )


def _change(rng: random.Random) -> Problem:
    n, (_, many) = rng.choice(NAMES), rng.choice(SNACKS)
    count, price = rng.randint(2, 5), rng.randint(2, 5)
    paid = rng.choice([p for p in (10, 20, 50) if p > count * price])
    total = count * price
    question = (
        f"{n} buys {count} {many} at ${price} each and pays with a ${paid} bill. "
        f"How much change does {n} get, in dollars?"
    )
    return question, paid - total, 2, [f"{count} × {price} = {total}", f"{paid} - {total} = {paid - total}"]


def _sharing(rng: random.Random) -> Problem:
    n, item = rng.choice(NAMES), rng.choice(ITEMS)
    friends, each = rng.randint(2, 6), rng.randint(2, 9)
    total = friends * each
    question = f"{n} shares {total} {item} equally among {friends} friends. How many {item} does each friend get?"
    return question, each, 1, [f"{total} ÷ {friends} = {each}"]


def _distance(rng: random.Random) -> Problem:
    n = rng.choice(NAMES)
    speed, hours = rng.randint(2, 9), rng.randint(2, 5)
    return (
        f"{n} cycles at {speed} km per hour for {hours} hours. How many kilometres does {n} cycle?",
        speed * hours,
        1,
        [f"{speed} × {hours} = {speed * hours}"],
    )


def _rows(rng: random.Random) -> Problem:
    n, item = rng.choice(NAMES), rng.choice(ITEMS)
    rows, per_row = rng.randint(2, 9), rng.randint(2, 9)
    question = f"{n} puts {item} in {rows} rows with {per_row} {item} in each row. How many {item} are there?"
    return question, rows * per_row, 1, [f"{rows} × {per_row} = {rows * per_row}"]


def _gain(rng: random.Random) -> Problem:
    n, item = rng.choice(NAMES), rng.choice(ITEMS)
    have, more = rng.randint(5, 40), rng.randint(2, 20)
    return (
        f"{n} has {have} {item}. {n} gets {more} more. How many {item} does {n} have now?",
        have + more,
        1,
        [f"{have} + {more} = {have + more}"],
    )


def _loss(rng: random.Random) -> Problem:
    n, item = rng.choice(NAMES), rng.choice(ITEMS)
    have, gone = rng.randint(12, 40), rng.randint(2, 11)
    return (
        f"{n} had {have} {item} and gave away {gone}. How many {item} does {n} have left?",
        have - gone,
        1,
        [f"{have} - {gone} = {have - gone}"],
    )


def _pages(rng: random.Random) -> Problem:
    n = rng.choice(NAMES)
    per_day, days, extra = rng.randint(2, 9), rng.randint(2, 6), rng.randint(3, 15)
    read = per_day * days
    question = (
        f"{n} reads {per_day} pages a day for {days} days, then reads {extra} more pages. "
        f"How many pages does {n} read in total?"
    )
    return question, read + extra, 2, [f"{per_day} × {days} = {read}", f"{read} + {extra} = {read + extra}"]


PROBLEMS: dict[str, Callable[[random.Random], Problem]] = {
    "shopping": _shopping,
    "change": _change,
    "sharing": _sharing,
    "distance": _distance,
    "rows": _rows,
    "gain": _gain,
    "loss": _loss,
    "pages": _pages,
}


def number_set(text: str) -> tuple[int, ...]:
    """The distinct numbers a problem states, sorted: what the split is drawn by."""
    return tuple(sorted({int(n) for n in re.findall(r"\d+", text)}))


def _bucket(text: str) -> str:
    """The split a problem belongs to, fixed by the hash of its number set so every seed agrees: an evaluation
    problem shares its set of numbers with no training problem (not only its wording), so a model cannot pass it
    by recalling a training problem's numbers or answer."""
    key = ",".join(map(str, number_set(text)))
    return "eval" if int(hashlib.sha1(key.encode()).hexdigest(), 16) % EVAL_BUCKETS == 0 else "train"


def _task_id(kind: str, text: str) -> str:
    return f"{kind}-{hashlib.sha1(text.encode()).hexdigest()[:10]}"


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split={split!r} is not one of {SPLITS}")


def _draw(split: str, n: int, seed: int, kinds: list[str] | None, max_steps: int) -> list[tuple[dict, list[str]]]:
    """n distinct problems of `split` with their working, drawn round-robin over `kinds`."""
    _check_split(split)
    kinds = list(kinds or PROBLEMS)
    unknown = [k for k in kinds if k not in PROBLEMS]
    if unknown:
        raise ValueError(f"unknown word-problem kinds {unknown}; known: {sorted(PROBLEMS)}")
    rng = random.Random(f"word_problems/{split}/{seed}")
    out: list[tuple[dict, list[str]]] = []
    seen: set[str] = set()
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 1000 * (n + 10):
            raise ValueError(f"cannot draw {n} distinct {split} problems of kinds {kinds} with max_steps={max_steps}")
        kind = kinds[len(out) % len(kinds)]
        question, answer, steps, working = PROBLEMS[kind](rng)
        if steps > max_steps:  # a kind's step count is fixed: leave it out of the rotation
            kinds.remove(kind)
            if not kinds:
                raise ValueError(f"no word-problem kind has at most {max_steps} steps")
            continue
        if question in seen or _bucket(question) != split:
            continue
        seen.add(question)
        out.append(
            (
                {"id": _task_id(kind, question), "question": question, "answer": answer, "kind": kind, "steps": steps},
                working,
            )
        )
    return out


def generate(split: str, n: int, seed: int = 0, kinds: list[str] | None = None, max_steps: int = 2) -> list[dict]:
    """n word problems {id, question, answer, kind, steps} of one split."""
    return [task for task, _ in _draw(split, n, seed, kinds, max_steps)]


def _slip(rng: random.Random, value: int) -> int:
    """A plausible wrong result: off by a small amount, never equal, never negative."""
    return max(0, value + rng.choice([-3, -2, -1, 1, 2, 3, 10])) if value > 3 else value + rng.choice([1, 2, 3])


def graded_solutions(
    split: str, n: int, seed: int = 0, kinds: list[str] | None = None, max_steps: int = 2, error_rate: float = 0.5
) -> list[dict]:
    """Word problems with a student's worked solution to grade. Adds `student_solution`
    (the working as text), `student_answer` and `solution_correct`. A wrong solution carries one
    slip in its last line, so the error is checkable against `answer`."""
    rng = random.Random(f"graded_solutions/{split}/{seed}")
    tasks = []
    for task, working in _draw(split, n, seed, kinds, max_steps):
        lines = list(working)
        student_answer = task["answer"]
        if rng.random() < error_rate:
            student_answer = _slip(rng, task["answer"])
            left = lines[-1].rsplit("=", 1)[0]
            lines[-1] = f"{left}= {student_answer}"
        solution = " ".join(f"{line}." for line in lines) + f" The answer is {student_answer}."
        tasks.append(
            task
            | {
                "student_solution": solution,
                "student_answer": student_answer,
                "solution_correct": student_answer == task["answer"],
            }
        )
    return tasks


GENERATORS: dict[str, Callable[..., list[dict]]] = {"word_problems": generate, "graded_solutions": graded_solutions}
