"""`source=dataset`: prompts from a dataset × `n` samples each (one GRPO group), reward from a verifier.

The task is data: rows from a local JSONL / Parquet / CSV file or a `datasets` name (`claw/tasks/rows.py`),
`instruction` (a template of row fields) makes the user message, `answer_field` names the answer, and
`reward` picks the verifier (`claw/tasks/verifiers.py`: a registered one or the user's own function).

A background thread keeps the queue filled while the trainer trains: it renders each row with the
chat template, asks the engine for `n` samples, scores them with the verifier, and puts the group
into the queue (which blocks while the queue is full).
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
from collections.abc import Callable, Mapping

from omegaconf import DictConfig, OmegaConf

from claw.engine.base import Engine, SamplingParams
from claw.evaluation import EvalResult, evaluate_correct
from claw.judge.teacher import Teacher
from claw.rollout.queue import RolloutQueue
from claw.tasks.rows import check_fields, load_rows, resolve_path, template_fields
from claw.tasks.verifiers import build_verifier
from claw.types import Sample

__all__ = ["DatasetSource", "resolve_path"]

log = logging.getLogger(__name__)


class DatasetSource:
    def __init__(
        self,
        engine: Engine,
        tokenizer,
        train_path: str,
        eval_path: str,
        name: str = "dataset",
        n: int = 4,
        prompts_per_generate: int = 8,
        temperature: float = 1.0,
        max_new_tokens: int = 64,
        system_prompt: str | None = None,
        instruction: str = "{question}",
        answer_field: str = "answer",
        reward: str | Mapping | Callable = "numeric_answer",
        train_split: str = "train",
        eval_split: str = "test",
        dataset_config: str | None = None,
        eval_size: int = 128,
        eval_max_new_tokens: int = 64,
        eval_temperature: float = 0.0,
        max_groups: int | None = None,
        seed: int = 0,
        hint_template: str = "The correct answer is {answer}.",
        teacher: Teacher | None = None,
        topk: int = 0,
        ahead: int | None = None,
        batch_size: int | None = None,
    ) -> None:
        if temperature <= 0:
            raise ValueError("source.temperature must be > 0: greedy samples carry no policy gradient")
        self.name = name
        self.engine = engine
        self.tokenizer = tokenizer
        self.train = load_rows(train_path, train_split, dataset_config)
        self.eval_set = load_rows(eval_path, eval_split, dataset_config)[:eval_size]
        # Bad data fails here, naming the key to change, before any sample is drawn.
        fields = template_fields(instruction)
        for rows, path in ((self.train, train_path), (self.eval_set, eval_path)):
            check_fields(rows, fields, path, f"source.instruction={instruction!r}")
            check_fields(rows, [answer_field], path, f"source.answer_field={answer_field!r}")
        if teacher is not None:
            check_fields(
                self.train,
                [f for f in template_fields(hint_template) if f != "answer"],
                train_path,
                f"source.hint_template={hint_template!r}",
            )
        self.answer_field = answer_field
        # Hydra hands the `reward` node over as it is (`_recursive_: false` in conf/source/dataset.yaml).
        self.verifier = build_verifier(
            OmegaConf.to_container(reward, resolve=True) if isinstance(reward, DictConfig) else reward
        )
        self.verifier.check(list(self.train[0]))
        self.n = n
        self.prompts_per_generate = prompts_per_generate
        self.sampling = SamplingParams(temperature=temperature, max_new_tokens=max_new_tokens)
        self.eval_sampling = SamplingParams(temperature=eval_temperature, max_new_tokens=eval_max_new_tokens)
        self.system_prompt = system_prompt
        self.instruction = instruction
        self.max_groups = max_groups
        self.seed = seed
        # OPD without judges: the verifier's feedback is the hint; `teacher` scores the sampled
        # response after the hinted prompt at the sample's own temperature.
        self.teacher = teacher
        self.hint_template = hint_template
        self.topk = topk
        self._order = list(range(len(self.train)))
        random.Random(seed).shuffle(self._order)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.produced = 0
        self.error: BaseException | None = None
        # How many rollout batches (of `batch_size` samples) generation may run ahead of the policy the engine
        # serves: 0 samples each batch with the weights trained on every batch before it (on-policy, the step in
        # sequence); None generates as far as the queue has room (the pipelined step, staleness ≥ 1).
        if ahead is not None and (ahead < 0 or not batch_size):
            raise ValueError(f"source.ahead={ahead} needs ahead ≥ 0 and the run's batch_size (got {batch_size})")
        self.ahead, self.batch_size = ahead, batch_size

    def user_message(self, row: dict | str) -> str:
        """`instruction` filled from the row's fields (a bare string is the row's `question`)."""
        return self.instruction.format(**(row if isinstance(row, dict) else {"question": row}))

    def messages(self, row: dict | str) -> list[dict]:
        messages = [{"role": "user", "content": self.user_message(row)}]
        if self.system_prompt:
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        return messages

    def render(self, row: dict | str) -> list[int]:
        ids = self.tokenizer.apply_chat_template(self.messages(row), add_generation_prompt=True, tokenize=True)
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)

    def score(self, rows: list[dict], texts: list[str], where: list[str]) -> list[float]:
        """The verifier's reward per (row, response text); a row it raises on scores 0.0 with a warning."""
        rewards, _ = self.verifier.score(
            [self.user_message(r) for r in rows], texts, rows, [r[self.answer_field] for r in rows], where
        )
        return rewards

    def problem(self, index: int) -> dict:
        return self.train[self._order[index % len(self._order)]]

    def make_groups(self, start: int, count: int) -> list[list[Sample]]:
        """Generate `count` groups for problems start..start+count-1 (one engine call)."""
        problems = [self.problem(start + k) for k in range(count)]
        prompts = [self.render(p) for p in problems]
        gens = self.engine.generate([p for p in prompts for _ in range(self.n)], self.sampling)
        teacher = self._teacher_scores(problems, gens) if self.teacher is not None else None
        texts = [self.tokenizer.decode(g.response_ids, skip_special_tokens=True) for g in gens]
        rows = [p for p in problems for _ in range(self.n)]
        where = [f"training row {self._order[(start + i // self.n) % len(self._order)]}" for i in range(len(gens))]
        rewards = self.score(rows, texts, where)
        groups = []
        for k, (prob, prompt) in enumerate(zip(problems, prompts)):
            gid = f"{self.name}-{start + k}"
            group = []
            for j, g in enumerate(gens[k * self.n : (k + 1) * self.n]):
                t_lp, t_ids, t_top = teacher[k * self.n + j] if teacher is not None else (None, None, None)
                text = texts[k * self.n + j]
                group.append(
                    Sample(
                        prompt_ids=prompt,
                        response_ids=g.response_ids,
                        rollout_logprobs=g.logprobs,
                        temperature=self.sampling.temperature,
                        policy_version=g.policy_version,
                        reward=rewards[k * self.n + j],
                        group_id=gid,
                        group_size=self.n,
                        source=self.name,
                        finished=g.finished,
                        teacher_logprobs=t_lp,
                        teacher_topk_ids=t_ids,
                        teacher_topk_logprobs=t_top,
                        info={
                            "question": prob.get("question", self.user_message(prob)),
                            "answer": prob[self.answer_field],
                            "response": text,
                            "hint": self._hint(prob) if teacher else None,
                        },
                    )
                )
            groups.append(group)
        return groups

    def _hint(self, problem: dict) -> str:
        return self.hint_template.format(**{**problem, "answer": problem[self.answer_field]})

    def _teacher_scores(self, problems: list[dict], gens) -> list:
        messages = [self.messages(p) for p in problems for _ in range(self.n)]
        hints = [self._hint(p) for p in problems for _ in range(self.n)]
        return self.teacher.logprobs(
            messages, hints, [g.response_ids for g in gens], self.sampling.temperature, self.topk
        )

    # -- background production ---------------------------------------------------------------
    def start(self, queue: RolloutQueue, resume_from: int = 0) -> None:
        self.produced = resume_from
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(queue,), name="claw-dataset-source", daemon=True)
        self._thread.start()

    def _run(self, queue: RolloutQueue) -> None:
        # On-policy, every batch waits for the trainer anyway: decode on its thread when it waits next (on CPU,
        # PyTorch on a second thread is slower for both, claw/engine/lane.py)
        lane = getattr(self.engine, "lane", None) if self.ahead == 0 else None
        with lane.patient() if lane is not None else contextlib.nullcontext():
            self._produce(queue)

    def _produce(self, queue: RolloutQueue) -> None:
        try:
            while not self._stop.is_set():
                count = self.prompts_per_generate
                if self.max_groups is not None:
                    count = min(count, self.max_groups - self.produced)
                    if count <= 0:
                        return
                if not self._policy_caught_up():
                    return
                for group in self.make_groups(self.produced, count):
                    while not queue.put(group, timeout=0.5):
                        if self._stop.is_set() or queue.closed:
                            return
                    self.produced += 1
        except BaseException as e:  # surfaced to the trainer by the datamodule
            self.error = e
            log.exception("dataset source failed")

    def _policy_caught_up(self) -> bool:
        """With `ahead` set, wait until the engine serves the policy trained on every batch more than `ahead` before
        the one the next group falls in (False: stopped while waiting)."""
        if self.ahead is not None:
            batch = self.produced * self.n // self.batch_size
            while self.engine.version < batch - self.ahead:
                if self._stop.wait(0.01):
                    return False
        return True

    @property
    def exhausted(self) -> bool:
        """True once `max_groups` groups have been produced (never, when unbounded)."""
        return self.max_groups is not None and self.produced >= self.max_groups

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    # -- evaluation ----------------------------------------------------------------------------
    def evaluate(self) -> EvalResult:
        """Greedy responses to the held-out rows; a response is correct when its reward is >= 1."""
        prompts = [self.render(p) for p in self.eval_set]
        gens = self.engine.generate(prompts, self.eval_sampling)
        texts = [self.tokenizer.decode(g.response_ids, skip_special_tokens=True) for g in gens]
        rewards = self.score(self.eval_set, texts, [f"held-out row {i}" for i in range(len(texts))])
        return evaluate_correct([int(r >= 1.0) for r in rewards], version=gens[0].policy_version if gens else 0)
