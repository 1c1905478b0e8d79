"""`engine=hf`: transformers decoding on the trainer's device, with its own copy of the weights.

A hand-written KV-cache decode loop rather than `model.generate`, because it
- samples from exactly softmax(logits / T) — no top_k=50 default, no hidden warpers — and
  returns the log-prob of each sampled token under that same distribution;
- drops finished rows from the batch and the cache, so no decoding is wasted on them.

The engine owns a separate copy of the policy, so the trainer can update its own copy meanwhile.
`load_weights` never waits for a generation in flight: it *stages* a copy of the new weights
(one memcpy) and returns; the next `generate`/`score` call swaps them in before it starts. So a
generation never sees half-updated weights, every token of it comes from one version, and the
trainer is not blocked for the length of a generation.

Canary traffic (claw/guard/canary.py): while the guard runs a canary, the engine holds a second copy of
the model with the candidate's weights (`load_canary`; freed by `stop_canary`). A call with `canary=True`
decodes with that copy and stamps its rows with the candidate's version (`Generation.canary` is True);
one call never mixes the two weight sets. The proxy's batcher makes one call per arm. The copy costs the
memory of one more set of weights for as long as the canary runs.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Sequence

import torch

from claw.engine.base import AdapterTable, Generation, OnToken, SamplingParams, ServedAdapter, per_row
from claw.engine.hf_adapters import PeftAdapters
from claw.engine.lane import MainLane
from claw.logprobs import position_ids, response_logits, token_logprobs


class HFEngine:
    def __init__(
        self,
        policy,
        seed: int = 0,
        max_batch_size: int = 64,
        score_batch_size: int | None = 8,
        adapters: dict | None = None,
    ) -> None:
        """`adapters` (personalize=per_user): {max_resident}: each request is decoded with its user's promoted
        LoRA adapter (`serve_adapter`, claw/engine/hf_adapters.py); None serves one policy."""
        if score_batch_size is not None and score_batch_size < 1:
            raise ValueError(f"score_batch_size must be >= 1 (or null: every row in one pass), got {score_batch_size}")
        self.tokenizer = policy.tokenizer
        self.model = copy.deepcopy(policy.model).eval().requires_grad_(False)
        self.version = 0
        self.max_batch_size = max_batch_size
        # rows per scoring forward: a row's full-vocabulary logits are T x V floats (SmolLM2, 96 tokens: ~58 MiB
        # with the temporaries), so scoring 32 rows at once took +1.9 GiB against +0.4 GiB in chunks of 8.
        # None: every row in one pass (what claw did before the chunks; a resumed older run keeps it)
        self.score_batch_size = score_batch_size
        self.lock = threading.Lock()
        self.generator = torch.Generator(device="cpu").manual_seed(seed)
        self.pad_id = self.tokenizer.pad_token_id
        self.eos_ids = {self.tokenizer.eos_token_id}
        self.tokens_generated = 0
        self._staged: tuple[dict[str, torch.Tensor], int] | None = None
        self._staged_lock = threading.Lock()
        self.canary_model: torch.nn.Module | None = None  # the candidate's weights while a canary runs
        self.canary_version: int | None = None
        self.adapters = AdapterTable() if adapters else None
        self._peft = PeftAdapters(self.model, int(adapters.get("max_resident", 8))) if adapters else None
        self.lane = MainLane()

    def _run(self, fn):
        """On CPU, decode on the main thread while the trainer waits for a batch (claw/engine/lane.py)."""
        return self.lane.run(fn) if self.device.type == "cpu" else fn()

    def serve_adapter(self, user: str, version: int, path: str) -> ServedAdapter:
        """From now on `user`'s requests decode with the adapter saved at `path` (a PEFT directory) as `version`."""
        if self.adapters is None:
            raise RuntimeError("this engine serves one policy: start it with adapters={...} (personalize=per_user)")
        return self.adapters.promote(user, version, path)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    # -- weights ---------------------------------------------------------------------------
    @torch.no_grad()
    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]], version: int) -> None:
        """Stage new weights (copied now, so the caller may keep training); applied before the next call."""
        params = self.model.state_dict(keep_vars=True)
        staged = {}
        for name, tensor in named_tensors:
            if name not in params:
                raise KeyError(f"engine has no parameter {name!r}")
            if tensor.shape != params[name].shape:
                raise ValueError(f"{name}: shape {tuple(tensor.shape)} != engine's {tuple(params[name].shape)}")
            staged[name] = tensor.detach().to(params[name].device, params[name].dtype, copy=True)
        with self._staged_lock:
            self._staged = (staged, version)
        if self.lock.acquire(blocking=False):  # idle engine: apply now
            try:
                self._apply_staged()
            finally:
                self.lock.release()

    @torch.no_grad()
    def _apply_staged(self) -> None:
        """Swap in staged weights. Caller holds `self.lock`."""
        with self._staged_lock:
            staged, self._staged = self._staged, None
        if staged is None:
            return
        tensors, version = staged
        params = self.model.state_dict(keep_vars=True)
        for name, tensor in tensors.items():
            params[name].data.copy_(tensor)
        self.version = version

    # -- canary ---------------------------------------------------------------------------
    @torch.no_grad()
    def load_canary(self, named_tensors: Iterable[tuple[str, torch.Tensor]], version: int) -> None:
        """Hold `version`'s weights beside the served ones: calls with `canary=True` decode with them.
        Waits for a generation in flight (the canary copy is made under the engine lock)."""
        with self.lane.holding(self.lock):
            self._run(self._apply_staged)
            if self.canary_model is None:
                self.canary_model = copy.deepcopy(self.model)
            params = self.canary_model.state_dict(keep_vars=True)
            for name, tensor in named_tensors:
                if name not in params:
                    raise KeyError(f"engine has no parameter {name!r}")
                if tensor.shape != params[name].shape:
                    raise ValueError(f"{name}: shape {tuple(tensor.shape)} != engine's {tuple(params[name].shape)}")
                params[name].data.copy_(tensor)
            self.canary_version = version

    def stop_canary(self) -> None:
        """Drop the candidate's copy; later `canary=True` calls decode with the served weights."""
        with self.lane.holding(self.lock):
            self.canary_model, self.canary_version = None, None

    def sleep(self) -> None:  # the hf engine keeps its weights resident
        pass

    def wake(self) -> None:
        pass

    def close(self) -> None:  # nothing outside this process to release
        pass

    # -- generation ------------------------------------------------------------------------
    def generate(
        self,
        prompts: list[list[int]],
        sampling: SamplingParams | Sequence[SamplingParams],
        on_token: OnToken | None = None,
        canary: bool = False,
    ) -> list[Generation]:
        """Decode every prompt; `sampling` is one SamplingParams for all rows or one per row. `canary=True`:
        with the canary's weights when one is loaded (`Generation.canary` says which weights decoded)."""
        rows = per_row(sampling, len(prompts))
        if self.adapters is not None:
            return self._generate_by_adapter(prompts, rows, on_token)
        out: list[Generation] = []
        for start in range(0, len(prompts), self.max_batch_size):
            chunk = slice(start, start + self.max_batch_size)
            cb = None if on_token is None else (lambda row, tok, lp, _o=start: on_token(row + _o, tok, lp))
            out.extend(self._generate_batch(prompts[chunk], rows[chunk], cb, canary))
        return out

    def _generate_by_adapter(
        self, prompts: list[list[int]], rows: list[SamplingParams], on_token: OnToken | None
    ) -> list[Generation]:
        """Rows grouped by the adapter serving their user (resolved now: a promotion during the call applies to
        the next), each group decoded with its adapter."""
        groups: dict[ServedAdapter | None, list[int]] = {}
        for i, r in enumerate(rows):
            groups.setdefault(self.adapters.get(r.user), []).append(i)
        out: list[Generation | None] = [None] * len(prompts)
        for adapter, idx in groups.items():
            for start in range(0, len(idx), self.max_batch_size):
                part = idx[start : start + self.max_batch_size]
                cb = None if on_token is None else (lambda row, tok, lp, _p=part: on_token(_p[row], tok, lp))
                gens = self._generate_batch([prompts[i] for i in part], [rows[i] for i in part], cb, adapter=adapter)
                for i, g in zip(part, gens, strict=True):
                    out[i] = g
        return out

    @torch.no_grad()
    def _generate_batch(
        self,
        prompts: list[list[int]],
        rows: list[SamplingParams],
        on_token: OnToken | None,
        canary: bool = False,
        adapter: ServedAdapter | None = None,
    ) -> list[Generation]:
        if any(len(p) == 0 for p in prompts):
            raise ValueError("empty prompt")
        with self.lane.holding(self.lock):
            self._run(self._apply_staged)
            canary = canary and self.canary_model is not None
            model = self.canary_model if canary else self.model
            version = self.canary_version if canary else self.version
            if self._peft is not None:
                model, version = self._peft.use(adapter), (self.version if adapter is None else adapter.version)
            if max(r.max_new_tokens for r in rows) <= 0:
                return [Generation([], [], False, version, canary) for _ in prompts]
            tokens, lps, finished = self._decode(model, prompts, rows, on_token)
        return [Generation(tokens[i], lps[i], finished[i], version, canary) for i in range(len(prompts))]

    def _decode(self, model, prompts: list[list[int]], rows: list[SamplingParams], on_token: OnToken | None):
        """The KV-cache decode loop over left-padded prompts: per row its tokens, their log-probs and whether it
        finished (a stop token, or `on_token` said stop); a row leaves the batch and the cache when it is done."""
        dev = self.device
        ids, mask = _left_padded(prompts, self.pad_id)
        ids, mask = ids.to(dev), mask.to(dev)
        stops = [self.eos_ids | set(r.stop_token_ids) for r in rows]
        limits = [r.max_new_tokens for r in rows]
        sample = _Sampler(rows, dev, self.generator)
        B = len(prompts)
        tokens: list[list[int]] = [[] for _ in range(B)]
        lps: list[list[float]] = [[] for _ in range(B)]
        finished = [False] * B
        alive = torch.arange(B, device=dev)  # original row of each live row
        pos_all = position_ids(mask)
        pos = pos_all[:, -1:]

        def prefill():
            out = model(input_ids=ids, attention_mask=mask, position_ids=pos_all, use_cache=True, logits_to_keep=1)
            return (out.past_key_values, *sample(out.logits[:, -1], alive))

        # Each forward pass and its sampling is one job on the lane: a decode moves to the trainer's thread as soon
        # as the trainer waits (claw/engine/lane.py); the bookkeeping and `on_token` stay on the caller's.
        cache, nxt, lp = self._run(prefill)
        while True:
            keep_rows = []
            for k, (row, tok, logp) in enumerate(zip(alive.tolist(), nxt.tolist(), lp.tolist())):
                tokens[row].append(tok)
                lps[row].append(logp)
                done = tok in stops[row]
                if on_token is not None and on_token(row, tok, logp):
                    done = True
                finished[row] = done
                if not done and len(tokens[row]) < limits[row]:
                    keep_rows.append(k)
            self.tokens_generated += len(alive)
            if not keep_rows:
                return tokens, lps, finished
            keep = None if len(keep_rows) == len(alive) else torch.tensor(keep_rows, device=dev)
            state = (model, sample, cache, alive, nxt, mask, pos, keep)
            cache, alive, nxt, lp, mask, pos = self._run(lambda state=state: _next_token(*state))

    # -- teacher forcing -------------------------------------------------------------------
    def score(
        self, prompts: list[list[int]], responses: list[list[int]], temperature: float = 1.0
    ) -> list[list[float]]:
        """log π(response_t | prompt, response_<t) at `temperature`, one list per response."""
        return [lp for lp, _, _ in self._score([prompts], (1.0,), responses, temperature, 0)]

    def score_topk(
        self, prompts: list[list[int]], responses: list[list[int]], temperature: float, k: int
    ) -> list[tuple[list[float], list[list[int]], list[list[float]]]]:
        """Per response: its token log-probs, and at each position the top-k ids and their log-probs."""
        return self._score([prompts], (1.0,), responses, temperature, k)

    def score_guided(
        self,
        prompt_sets: Sequence[list[list[int]]],
        weights: Sequence[float],
        responses: list[list[int]],
        temperature: float,
        k: int = 0,
    ) -> list[tuple[list[float], list[list[int]] | None, list[list[float]] | None]]:
        """`score_topk` under the distribution softmax(Σ_j weights[j] · logits(prompt_sets[j][i] + response_<t) / T):
        each response scored after one prompt of every set, their next-token logits mixed (the guided
        teacher, claw/judge/teacher.py). Needs full logits, which only this engine keeps."""
        if len(prompt_sets) != len(weights) or any(len(ps) != len(responses) for ps in prompt_sets):
            raise ValueError("score_guided needs one weight per prompt set and one prompt per response in every set")
        return self._score(prompt_sets, weights, responses, temperature, k)

    @torch.no_grad()
    def _score(self, prompt_sets, weights, responses, temperature: float, k: int):
        """Rows in chunks of `score_batch_size`, so peak memory does not grow with the number of rows; each chunk one
        job on the lane."""
        out = []
        chunk = self.score_batch_size or max(len(responses), 1)
        with self.lane.holding(self.lock):
            self._run(self._apply_staged)
            for start in range(0, len(responses), chunk):
                part = (
                    [ps[start : start + chunk] for ps in prompt_sets],
                    weights,
                    responses[start : start + chunk],
                    temperature,
                    k,
                )
                out += self._run(lambda part=part: self._score_rows(*part))
        return out

    def _score_rows(self, prompt_sets, weights, responses, temperature: float, k: int):
        T = max(max(len(r) for r in responses), 1)
        logits = sum(w * self._response_logits(prompts, responses, T) for prompts, w in zip(prompt_sets, weights))
        ids = torch.zeros((len(responses), T), dtype=torch.long, device=logits.device)
        for i, r in enumerate(responses):
            ids[i, : len(r)] = torch.tensor(r)
        lp = token_logprobs(logits, ids, temperature).cpu()
        top_ids = top_lp = None
        if k:
            logp = torch.log_softmax(logits.float() / temperature, dim=-1)
            top_lp, top_ids = logp.topk(k, dim=-1)
            top_lp, top_ids = top_lp.cpu(), top_ids.cpu()
        del logits
        out = []
        for i, r in enumerate(responses):
            n = len(r)
            out.append(
                (lp[i, :n].tolist(), top_ids[i, :n].tolist() if k else None, top_lp[i, :n].tolist() if k else None)
            )
        return out

    def _response_logits(self, prompts: list[list[int]], responses: list[list[int]], T: int) -> torch.Tensor:
        """[B, T, V] next-token logits at each response position, prompts left-padded to one length."""
        P = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), P + T), self.pad_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, (p, r) in enumerate(zip(prompts, responses)):
            ids[i, P - len(p) : P + len(r)] = torch.tensor(p + r)
            mask[i, P - len(p) : P + len(r)] = 1
        model = self.model if self._peft is None else self._peft.use(self.adapters.get(None))  # the base's
        return response_logits(model, ids.to(self.device), mask.to(self.device), P)


def _next_token(model, sample, cache, alive, nxt, mask, pos, keep):
    """One decoding step: finished rows dropped from the batch and the KV cache (`keep`: the rows that go on), one
    forward pass, the next token sampled. Returns the new (cache, alive, tokens, log-probs, mask, positions)."""
    if keep is not None:
        alive, nxt, mask, pos = alive[keep], nxt[keep], mask[keep], pos[keep]
        cache.batch_select_indices(keep)
    mask = torch.cat([mask, mask.new_ones((len(alive), 1))], dim=1)
    pos = pos + 1
    out = model(
        input_ids=nxt.unsqueeze(-1), attention_mask=mask, position_ids=pos, past_key_values=cache, use_cache=True
    )
    return (out.past_key_values, alive, *sample(out.logits[:, -1], alive), mask, pos)


def _left_padded(prompts: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """[B, P] token ids and attention mask, each prompt right-aligned after `pad_id` padding."""
    B, P = len(prompts), max(len(p) for p in prompts)
    ids = torch.full((B, P), pad_id, dtype=torch.long)
    mask = torch.zeros((B, P), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, P - len(p) :] = torch.tensor(p)
        mask[i, P - len(p) :] = 1
    return ids, mask


class _Sampler:
    """Each live row's next token and its log-prob under softmax(logits / T). Greedy rows (T <= 0) take the argmax;
    their log-probs are reported at T = 1. A row with its own seed samples from its own generator: its tokens do
    not depend on its batch."""

    def __init__(self, rows: list[SamplingParams], device: torch.device, generator: torch.Generator) -> None:
        self.temps = torch.tensor([r.temperature if r.temperature > 0 else 1.0 for r in rows], device=device)
        self.temps = self.temps.unsqueeze(-1)
        self.greedy = torch.tensor([r.temperature <= 0 for r in rows], device=device)
        self.own = {
            i: torch.Generator().manual_seed(r.seed % (1 << 63))
            for i, r in enumerate(rows)
            if r.seed is not None and r.temperature > 0
        }
        self.device = device
        self.generator = generator

    def __call__(self, logits: torch.Tensor, alive: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """`logits` [n, V] of the live rows, `alive` their original rows: the sampled ids and log-probs, [n] each."""
        T, g = self.temps[alive], self.greedy[alive]
        scaled = logits.float() / T
        nxt = scaled.argmax(-1)
        if not bool(g.all()):
            probs = torch.softmax(scaled, dim=-1).cpu()
            sampled = torch.multinomial(probs, 1, generator=self.generator).squeeze(-1)
            for k, row in enumerate(alive.tolist()):
                if row in self.own:
                    sampled[k] = torch.multinomial(probs[k], 1, generator=self.own[row])[0]
            nxt = torch.where(g, nxt, sampled.to(self.device))
        lp = torch.log_softmax(scaled, dim=-1).gather(-1, nxt.unsqueeze(-1)).squeeze(-1)
        return nxt, lp
