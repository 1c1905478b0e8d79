"""The unit of data (`Sample`, one trainable agent turn) and its padded, batched form (`Batch`).

Tensors in a `Sample` are 1-D over *response* tokens unless noted. A `Batch` lays out
``[left pad | prompt | response | right pad]`` so that every response starts at the same
column ``prompt_len``: the response logits are one contiguous slice of the model output.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import torch

# A stored record deleted at its user's request (claw/users/data.py): its line keeps its place, never its content.
FORGOTTEN = "forgotten"


@dataclass
class Sample:
    prompt_ids: list[int]  # [P] exact ids the engine consumed
    response_ids: list[int]  # [T] exact ids the engine sampled
    rollout_logprobs: list[float]  # [T] log π_behaviour(a_t) under the distribution sampled from
    temperature: float  # sampling temperature; 0 = greedy (kept for logging, never trained)
    policy_version: int  # engine weights version that generated it
    response_mask: list[int] | None = None  # [T] 1 = train this token; None = all ones (Batch.response_mask's row)
    reward: float | None = None  # scalar from judge / verifier / user
    teacher_logprobs: list[float] | None = None  # [T] OPD teacher log-probs at `temperature` (None = no accepted hint)
    teacher_topk_ids: list[list[int]] | None = None  # [T, K] teacher's top-K token ids (top-K distillation)
    teacher_topk_logprobs: list[list[float]] | None = None  # [T, K] their teacher log-probs
    group_id: str = ""  # samples sharing a prompt (GRPO group)
    group_size: int = 1
    source: str = ""
    session_id: str = ""
    user: str = ""  # whose turn it is (claw/users/keys.py); "" where the source has no users
    turn_index: int = 0
    finished: bool = True  # False when cut at max_new_tokens
    sample_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created_at: float = field(default_factory=time.time)
    info: dict[str, Any] = field(default_factory=dict)  # lineage: prompt text, answer, next_state, hint, votes...

    def __post_init__(self) -> None:
        if len(self.rollout_logprobs) != len(self.response_ids):
            raise ValueError(
                f"rollout_logprobs has {len(self.rollout_logprobs)} entries "
                f"for {len(self.response_ids)} response tokens"
            )
        if self.response_mask is None:
            self.response_mask = [1] * len(self.response_ids)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Sample:
        d = {_RENAMED_FIELDS.get(k, k): v for k, v in d.items() if k not in _RETIRED_FIELDS}  # older stores
        return cls(**d)


# Fields older versions wrote that no longer exist: `truncated` (never set by any source; GAE treats
# every turn as terminal, see claw/advantages/gae.py).
_RETIRED_FIELDS = frozenset({"truncated"})
# Fields older versions wrote under another name: one name per field end to end.
_RENAMED_FIELDS = {"loss_mask": "response_mask"}


@dataclass
class Batch:
    """A padded rollout batch. B = samples, P = max prompt length, T = max response length."""

    input_ids: torch.Tensor  # [B, P+T] long, prompts left-padded, responses right-padded
    attention_mask: torch.Tensor  # [B, P+T] long
    prompt_len: int  # P: column where every response starts
    response_mask: torch.Tensor  # [B, T] float, 1 on real (and trainable) response tokens
    rollout_logprobs: torch.Tensor  # [B, T] float
    temperature: torch.Tensor  # [B] float
    rewards: torch.Tensor  # [B] float (0 where absent)
    reward_mask: torch.Tensor  # [B] float, 1 where the sample has a reward
    policy_version: torch.Tensor  # [B] long
    group_index: torch.Tensor  # [B] long, samples with equal index share a prompt
    teacher_logprobs: torch.Tensor | None  # [B, T] float or None
    teacher_mask: torch.Tensor  # [B] float, 1 where teacher log-probs are real (an accepted hint)
    sample_ids: list[str]
    sources: list[str]  # per sample, for per-source running baselines
    teacher_topk_ids: torch.Tensor | None = None  # [B, T, K] long
    teacher_topk_logprobs: torch.Tensor | None = None  # [B, T, K] float
    finished: torch.Tensor | None = None  # [B] float, 1 = ended on a stop token, 0 = cut at the token budget
    infos: list[dict[str, Any]] = field(
        default_factory=list
    )  # per-sample lineage (prompt text, response, hint, votes...)
    meta: dict[str, Any] = field(
        default_factory=dict
    )  # non-tensor bookkeeping: queue cursor, dropped ids, rollout stats

    @property
    def size(self) -> int:
        return self.input_ids.shape[0]

    @property
    def response_ids(self) -> torch.Tensor:  # [B, T]
        return self.input_ids[:, self.prompt_len :]

    def to(self, device: torch.device | str) -> Batch:
        """The same batch with every tensor on `device`."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, torch.Tensor):
                setattr(self, f.name, value.to(device))
        return self

    def select(self, idx: torch.Tensor) -> Batch:
        """Rows `idx` (a minibatch), keeping the common layout."""
        pick = lambda t: None if t is None else t[idx]  # noqa: E731
        return Batch(
            input_ids=self.input_ids[idx],
            attention_mask=self.attention_mask[idx],
            prompt_len=self.prompt_len,
            response_mask=self.response_mask[idx],
            rollout_logprobs=self.rollout_logprobs[idx],
            temperature=self.temperature[idx],
            rewards=self.rewards[idx],
            reward_mask=self.reward_mask[idx],
            policy_version=self.policy_version[idx],
            group_index=self.group_index[idx],
            teacher_logprobs=pick(self.teacher_logprobs),
            teacher_mask=self.teacher_mask[idx],
            sample_ids=[self.sample_ids[i] for i in idx.tolist()],
            sources=[self.sources[i] for i in idx.tolist()],
            teacher_topk_ids=pick(self.teacher_topk_ids),
            teacher_topk_logprobs=pick(self.teacher_topk_logprobs),
            finished=pick(self.finished),
            infos=[self.infos[i] for i in idx.tolist()] if self.infos else [],
            meta=self.meta,
        )


def collate(samples: list[Sample], pad_id: int) -> Batch:
    """Pad samples into a `Batch`. Greedy samples (temperature 0) get an all-zero response mask."""
    if not samples:
        raise ValueError("cannot collate an empty list of samples")
    B = len(samples)
    P = max(len(s.prompt_ids) for s in samples)
    T = max(max(len(s.response_ids) for s in samples), 1)
    input_ids = torch.full((B, P + T), pad_id, dtype=torch.long)
    attention = torch.zeros((B, P + T), dtype=torch.long)
    response_mask = torch.zeros((B, T))
    rollout_lp = torch.zeros((B, T))
    teacher = torch.zeros((B, T)) if any(s.teacher_logprobs is not None for s in samples) else None
    K = max((len(s.teacher_topk_ids[0]) for s in samples if s.teacher_topk_ids), default=0)
    topk_ids = torch.zeros((B, T, K), dtype=torch.long) if K else None
    topk_lp = torch.full((B, T, K), -1e4) if K else None  # a missing row has ~zero teacher mass
    groups: dict[str, int] = {}
    group_index = torch.empty(B, dtype=torch.long)
    for i, s in enumerate(samples):
        p, t = len(s.prompt_ids), len(s.response_ids)
        input_ids[i, P - p : P] = torch.tensor(s.prompt_ids, dtype=torch.long)
        input_ids[i, P : P + t] = torch.tensor(s.response_ids, dtype=torch.long)
        attention[i, P - p : P + t] = 1
        if s.temperature > 0:
            response_mask[i, :t] = torch.tensor(s.response_mask, dtype=torch.float)
        rollout_lp[i, :t] = torch.tensor(s.rollout_logprobs)
        if teacher is not None and s.teacher_logprobs is not None:
            teacher[i, :t] = torch.tensor(s.teacher_logprobs)
        if topk_ids is not None and s.teacher_topk_ids:
            topk_ids[i, :t] = torch.tensor(s.teacher_topk_ids)
            topk_lp[i, :t] = torch.tensor(s.teacher_topk_logprobs)
        group_index[i] = groups.setdefault(s.group_id or s.sample_id, len(groups))
    return Batch(
        input_ids=input_ids,
        attention_mask=attention,
        prompt_len=P,
        response_mask=response_mask,
        rollout_logprobs=rollout_lp,
        temperature=torch.tensor([s.temperature if s.temperature > 0 else 1.0 for s in samples]),
        rewards=torch.tensor([0.0 if s.reward is None else float(s.reward) for s in samples]),
        reward_mask=torch.tensor([0.0 if s.reward is None else 1.0 for s in samples]),
        policy_version=torch.tensor([s.policy_version for s in samples], dtype=torch.long),
        group_index=group_index,
        teacher_logprobs=teacher,
        teacher_mask=torch.tensor([0.0 if s.teacher_logprobs is None else 1.0 for s in samples]),
        sample_ids=[s.sample_id for s in samples],
        sources=[s.source for s in samples],
        teacher_topk_ids=topk_ids,
        teacher_topk_logprobs=topk_lp,
        finished=torch.tensor([1.0 if s.finished else 0.0 for s in samples]),
        infos=[
            {
                **s.info,
                "reward": s.reward,
                "policy_version": s.policy_version,
                "sample_id": s.sample_id,
                "user": s.user,
            }
            for s in samples
        ],
    )
