"""The dataset source: groups of n samples of one prompt, rewards from the verifier, background filling;
tasks as data (any file or `datasets` name, a template, a verifier) and the errors bad input gets."""

import csv
import json
import random
import re
import shutil

import pytest
from hydra.utils import instantiate

from claw.engine import Generation, HFEngine, SamplingParams
from claw.rollout.queue import RolloutQueue
from claw.sources.dataset import DatasetSource
from claw.tasks import arithmetic, review_sentiment
from claw.tasks.arithmetic import generate, parse_answer, reward
from claw.tasks.rows import load_rows
from claw.tasks.verifiers import build_verifier
from tests.conftest import DATASET, TINY, make_cfg


@pytest.mark.parametrize(
    "text,value",
    [
        ("12 + 7 = 19", 19),
        ("The answer is 42.", 42),
        ("Answer: 1,234", 1234),
        ("First 3 then 5, so the answer is 8. Check: 8 - 5 = 3", 8),
        ("no number here", None),
    ],
)
def test_parse_answer(text, value):
    assert parse_answer(text) == value


def test_reward_exact_integer():
    assert reward("so 19", 19) == 1.0
    assert reward("so 19.5", 19) == 0.0
    assert reward("nothing", 19) == 0.0


def test_generated_splits_are_disjoint_and_seeded():
    tr, te = generate(200, 50, seed=3)
    assert not {p["question"] for p in tr} & {p["question"] for p in te}
    assert generate(200, 50, seed=3) == (tr, te)
    assert all(isinstance(p["answer"], int) and p["answer"] > 0 for p in tr + te)


class ScriptedEngine:
    """A stand-in engine that answers each prompt with fixed text (isolates the source's logic)."""

    version = 5

    def __init__(self, tok, texts):
        self.tok, self.texts, self.calls = tok, texts, 0

    def generate(self, prompts, sampling):
        out = []
        for i, _ in enumerate(prompts):
            ids = self.tok.encode(self.texts[i % len(self.texts)], add_special_tokens=False)
            out.append(Generation(ids, [-0.5] * len(ids), True, self.version))
        self.calls += 1
        return out


def test_groups_and_rewards(tiny_policy, tmp_path):
    tok = tiny_policy.tokenizer
    src = DatasetSource(
        ScriptedEngine(tok, ["x"]),
        tok,
        "data/arithmetic/train.jsonl",
        "data/arithmetic/test.jsonl",
        n=3,
        prompts_per_generate=2,
    )
    answer0 = src.problem(0)["answer"]
    src.engine.texts = [f"The answer is {answer0}.", "The answer is -1.", f"so {answer0}"]
    groups = src.make_groups(0, 2)
    assert len(groups) == 2 and all(len(g) == 3 for g in groups)
    g0 = groups[0]
    assert len({s.group_id for s in g0}) == 1 and groups[1][0].group_id != g0[0].group_id
    assert [s.reward for s in g0] == [1.0, 0.0, 1.0]
    assert all(s.prompt_ids == g0[0].prompt_ids and s.policy_version == 5 for s in g0)
    assert tok.decode(g0[0].prompt_ids).rstrip().endswith("assistant")  # chat template with generation prompt
    assert g0[0].info["answer"] == answer0


def test_background_thread_fills_queue_and_stops(tiny_policy, tmp_path):
    eng = HFEngine(tiny_policy)
    src = DatasetSource(
        eng,
        tiny_policy.tokenizer,
        "data/arithmetic/train.jsonl",
        "data/arithmetic/test.jsonl",
        n=2,
        prompts_per_generate=2,
        max_new_tokens=4,
        max_groups=3,
    )
    q = RolloutQueue(tmp_path / "s.jsonl", max_size=100, fsync=False)
    src.start(q)
    src._thread.join(timeout=60)
    assert src.error is None and src.produced == 3 and len(q) == 6
    t = q.take(6, 0, timeout=1)
    assert len({s.group_id for s in t.samples}) == 3
    assert all(len(s.response_ids) <= 4 and s.temperature == 1.0 for s in t.samples)


def test_rejects_greedy_training_samples(tiny_policy):
    with pytest.raises(ValueError, match="temperature"):
        DatasetSource(
            None, tiny_policy.tokenizer, "data/arithmetic/train.jsonl", "data/arithmetic/test.jsonl", temperature=0.0
        )


def test_sampling_params_default_full_distribution():
    assert SamplingParams().temperature == 1.0 and SamplingParams().stop_token_ids == ()


# -- tasks as data ---------------------------------------------------------------------------------


def build(cfg, tok, engine=None):
    """The source exactly as train.py builds it from `cfg.source`."""
    return instantiate(cfg.source, engine=engine, tokenizer=tok, teacher=None, topk=0)


def test_the_default_config_gives_the_arithmetic_data_as_before(tiny_policy):
    tok = tiny_policy.tokenizer
    src = build(make_cfg(TINY), tok, ScriptedEngine(tok, ["x"]))
    rows = arithmetic.load("data/arithmetic/train.jsonl")
    order = list(range(len(rows)))
    random.Random(0).shuffle(order)
    for k in range(8):  # the same rows in the same order, the same user message
        assert src.problem(k) == rows[order[k]]
        assert src.messages(src.problem(k)) == [{"role": "user", "content": rows[order[k]]["question"] + " Be brief."}]
    texts = ["The answer is 15.", "so 7", "Answer: 1,234", "none", "12 + 3 = 15. Check: 15 - 3 = 12"]
    for row in rows[:20]:
        assert src.score([row] * len(texts), texts, ["r"] * len(texts)) == [reward(t, row["answer"]) for t in texts]
    assert src.render(rows[0]["question"]) == src.render(rows[0])  # a bare question string still renders (guard probe)


ROWS = [{"word": w, "unit": u, "answer": a} for w, u, a in [("three", "km", 3), ("five", "m", 5), ("nine", "cm", 9)]]


def write_all_formats(tmp_path) -> dict[str, str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = {fmt: str(tmp_path / f"rows.{fmt}") for fmt in ("jsonl", "json", "csv", "parquet")}
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "rows.json").write_text(json.dumps({"data": ROWS}))
    with open(paths["csv"], "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(ROWS[0]))
        w.writeheader()
        w.writerows(ROWS)
    pq.write_table(pa.Table.from_pylist(ROWS), paths["parquet"])
    return paths


def test_rows_from_jsonl_json_csv_parquet_and_datasets_are_the_same(tmp_path):
    import datasets

    paths = write_all_formats(tmp_path)
    for fmt in ("jsonl", "json", "parquet"):
        assert load_rows(paths[fmt]) == ROWS, fmt
    assert load_rows(paths["csv"]) == [{k: str(v) for k, v in r.items()} for r in ROWS]  # CSV cells are text
    datasets.Dataset.from_list(ROWS).save_to_disk(str(tmp_path / "saved"))  # a `datasets` directory
    assert load_rows(str(tmp_path / "saved")) == ROWS
    datasets.DatasetDict({"validation": datasets.Dataset.from_list(ROWS[:1])}).save_to_disk(
        str(tmp_path / "saved_dict")
    )
    assert load_rows(str(tmp_path / "saved_dict"), split="validation") == ROWS[:1]


def test_a_datasets_name_loads_offline_from_the_cache(tmp_path, monkeypatch):
    """What `datasets.load_dataset("someone/tiny_task", "main")` leaves in the cache on a machine with network,
    built here from a local file (no network): claw reads it back by name, offline."""
    import datasets

    src = write_all_formats(tmp_path)["jsonl"]
    cache = tmp_path / "hf_cache"
    builder = datasets.load_dataset_builder("json", data_files={"train": src}, cache_dir=str(cache))
    builder.download_and_prepare()
    built = next(p for p in cache.rglob("*") if p.is_dir() and any(p.glob("*.arrow")))
    leaf = cache / "someone___tiny_task" / "main" / "0.0.0" / built.name  # the layout of a Hub dataset's cache
    shutil.copytree(built, leaf)
    for f in leaf.glob("json-*.arrow"):
        f.rename(f.with_name(f.name.replace("json-", "tiny_task-")))
    info = json.loads((leaf / "dataset_info.json").read_text())
    (leaf / "dataset_info.json").write_text(json.dumps({**info, "config_name": "main"}))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(cache))
    assert load_rows("someone/tiny_task", split="train", dataset_config="main") == ROWS
    with pytest.raises(ValueError, match="no split 'test'.*source.train_split / source.eval_split"):
        load_rows("someone/tiny_task", split="test", dataset_config="main")
    with pytest.raises(FileNotFoundError, match="nor a dataset in the `datasets` cache.*never downloads at run time"):
        load_rows("someone/not_cached")


@pytest.mark.parametrize(
    "overrides,match",
    [
        (["source.train_path=data/nope/train.jsonl"], "data/nope/train.jsonl: no such file .*fix the path"),
        (
            ["source.instruction='{question} in {unit}'"],
            r"source.instruction='\{question\} in \{unit\}' reads 'unit', "
            r"but row 0 of .* has only the columns question, answer, template",
        ),
        (
            ["source.answer_field=solution"],
            "source.answer_field='solution' reads 'solution'.*columns question, answer, template",
        ),
        (["source.reward._target_=exactmatch"], "'exactmatch' is not registered"),
        (["source.reward._target_=tests.test_verifiers.needs_solution"], "needs 'solution', which claw does not pass"),
        (["source.instruction='Solve {}'"], "positional field"),
    ],
)
def test_bad_input_names_the_fix(tiny_policy, overrides, match):
    with pytest.raises(Exception) as raised:
        build(make_cfg([*DATASET, *overrides]), tiny_policy.tokenizer)
    error = raised.value.__cause__ or raised.value  # Hydra's InstantiationException carries the source's error
    assert isinstance(error, (FileNotFoundError, ValueError, TypeError)) and re.search(match, str(error)), error


def test_a_row_the_verifier_raises_on_trains_with_reward_zero(tiny_policy, caplog):
    tok = tiny_policy.tokenizer
    src = build(
        make_cfg([*DATASET, "source.n=2", "source.reward._target_=tests.test_verifiers.raises_on_boom"]),
        tok,
        ScriptedEngine(tok, ["boom", "x"]),
    )
    groups = src.make_groups(0, 2)
    assert [s.reward for g in groups for s in g] == [0.0, 0.0, 0.0, 0.0]
    assert (
        src.verifier.errors == 2
        and f"failed on training row {src._order[0]} (RuntimeError: cannot parse boom)" in caplog.text
    )


def test_review_sentiment_splits_are_disjoint_and_match_the_shipped_files():
    train, test = review_sentiment.generate()
    phrase = lambda r: r["review"].split(" ", 2)[-1]  # noqa: E731 - drop the two-word subject
    assert not {phrase(r) for r in train} & {phrase(r) for r in test}
    assert (train, test) == (
        load_rows("data/review_sentiment/train.jsonl"),
        load_rows("data/review_sentiment/test.jsonl"),
    )
    assert {r["label"] for r in test} == {"positive", "negative"}


def user_reward(prompts, completions, answer, **columns):
    """A user's TRL-style reward for the end-to-end test: the reply's length in words against the row's `words`."""
    return [float(len(c.split()) <= int(w)) for c, w in zip(completions, columns["words"])]


def test_a_users_own_task_trains_end_to_end_with_no_code_change(tmp_path):
    from train import run

    data = tmp_path / "task.csv"
    with open(data, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["topic", "words", "reference"])
        w.writerows([[t, n, "-"] for t, n in [("rain", 3), ("cats", 5), ("tea", 4), ("maps", 6)]])
    cfg = make_cfg(
        [
            *TINY,
            "steps=1",
            f"source.train_path={data}",
            f"source.eval_path={data}",
            "source.instruction='Describe {topic} in at most {words} words.'",
            "source.answer_field=reference",
            "source.reward._target_=tests.test_dataset_source:user_reward",
        ],
        tmp_path / "run",
    )
    assert run(cfg)["steps"] == 1
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) >= 8 and all(s["info"]["answer"] == "-" for s in samples)
    fn = build_verifier("tests.test_dataset_source:user_reward")
    by_topic = {r["topic"]: r for r in load_rows(str(data))}
    for s in samples:  # the stored reward is the user's function on the stored response
        row = next(
            r for t, r in by_topic.items() if s["info"]["question"] == f"Describe {t} in at most {r['words']} words."
        )
        assert s["reward"] == user_reward([], [s["info"]["response"]], "-", words=[row["words"]])[0]
        assert s["reward"] == fn(["p"], [s["info"]["response"]], [row], ["-"])[0]


@pytest.mark.parametrize("experiment", ["grpo_arithmetic", "grpo_review_sentiment"])
def test_shipped_tasks_train_end_to_end(experiment, tmp_path):
    """Each shipped task, its own config on the tiny model for one step: rewards are its verifier's on
    what was trained."""
    from train import run

    cfg = make_cfg([f"experiment={experiment}", *[o for o in TINY if o not in DATASET], "steps=1"], tmp_path)
    assert run(cfg)["steps"] == 1
    verifier = build_verifier(dict(cfg.source.reward))
    samples = [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert len(samples) >= cfg.batch_size
    expected, _ = verifier.score(
        ["p"] * len(samples),
        [s["info"]["response"] for s in samples],
        [{}] * len(samples),
        [s["info"]["answer"] for s in samples],
        ["r"] * len(samples),
    )
    assert [s["reward"] for s in samples] == expected
    assert json.loads((tmp_path / "eval.json").read_text())["after"]["n"] == cfg.source.eval_size


@pytest.mark.parametrize("ahead", [0, None])
def test_ahead_zero_samples_every_batch_with_the_policy_trained_on_all_before_it(ahead, tmp_path):
    """`source.ahead=0`: batch k is generated by policy version k (the step in sequence, staleness 0); unbounded,
    generation runs ahead of training and a batch trains on samples of an older version."""
    from train import run

    extra = [] if ahead is None else [f"source.ahead={ahead}"]
    cfg = make_cfg([*TINY, "steps=3", "source.max_new_tokens=16", "max_staleness=2", *extra], tmp_path / "run")
    assert run(cfg)["steps"] == 3
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    versions = [s["policy_version"] for s in samples]
    if ahead == 0:
        # 8 samples a batch, nothing generated ahead (after the last step, version 3 may start the next batch)
        assert versions[:24] == [0] * 8 + [1] * 8 + [2] * 8 and set(versions[24:]) <= {3}
    else:
        assert versions[8:16] == [0] * 8  # the second batch was generated before the first had trained


def test_ahead_needs_the_batch_size(tiny_policy):
    with pytest.raises(ValueError, match="batch_size"):
        DatasetSource(
            HFEngine(tiny_policy),
            tiny_policy.tokenizer,
            "data/arithmetic/train.jsonl",
            "data/arithmetic/test.jsonl",
            ahead=0,
        )
