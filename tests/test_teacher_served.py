"""A teacher served elsewhere (`mode.teacher=<URL>`, claw/judge/teacher_served.py).

Fast: against a stand-in server over real HTTP, the log-probs line up with the response tokens (top-K too); a wrong
echoed id, too few log-probs, a 5xx, a 4xx or a server that is down are each a `TeacherError` naming what went wrong,
after the judge backends' retries; and the labelled turn then trains on its reward alone (`teacher_failed`).
With a real vLLM OpenAI server on the tiny model (~25 s to start): the served teacher's log-probs and top-K equal
the in-process frozen teacher's on real hinted turns, and so does one OPD training step's loss.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from claw.engine.prompt_scores import ScoreMismatch, read_scores
from claw.judge.teacher import Teacher, build_teacher
from claw.judge.teacher_served import ServedTeacher, TeacherError, served_options
from tests.conftest import make_cfg

MSGS = [{"role": "user", "content": "What is 2 + 3?"}]
TOP = {"7": {"logprob": -0.01, "rank": 1}, "8": {"logprob": -0.02, "rank": 2}}  # every position's top 2


def _entry(tok: int, pos: int) -> dict:
    return {**TOP, str(tok): {"logprob": -pos / 100, "rank": 3}}  # our token's log-prob says where it was scored


class _Stand(BaseHTTPRequestHandler):
    """A `/v1/completions` that scores `prompt_logprobs` as vLLM lays them out, or fails as `fault` says."""

    fault: str | None = None
    requests: list[dict] = []

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        ids = list(body["prompt"])
        if self.fault in ("500", "400"):
            return self._send(int(self.fault), {"error": "no"})
        echoed = list(ids)
        entries = [None] + [_entry(t, i) for i, t in enumerate(ids) if i > 0]
        if self.fault == "wrong_id":
            echoed[-2] += 1  # the server scored another token at the response's second-last position
        if self.fault == "short":
            entries = entries[:-1]  # one log-prob short
        choice = {"text": "", "prompt_token_ids": echoed, "prompt_logprobs": entries, "token_ids": [5]}
        self._send(200, {"choices": [choice]})

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def stand():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stand)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Stand.fault, _Stand.requests = None, []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_log_probs_line_up_with_the_response_and_keep_the_top_k(stand):
    teacher = ServedTeacher(stand, model="teacher", api_key="sk-test", backoff_s=0.0)
    prompt, response = [1, 2, 3], [20, 21, 22]
    [(lps, ids, tops)] = teacher.score_topk([prompt], [response], 1.0, 2)
    assert lps == pytest.approx([-0.03, -0.04, -0.05])  # positions 3, 4, 5 of prompt + response: no shift
    assert ids == [[7, 8]] * 3 and tops == [[-0.01, -0.02]] * 3
    assert teacher.score([prompt], [response]) == [lps]
    req = _Stand.requests[0]
    assert req["path"] == "/v1/completions" and req["auth"] == "Bearer sk-test" and req["model"] == "teacher"
    assert req["prompt"] == prompt + response and req["max_tokens"] == 1 and req["prompt_logprobs"] == 2
    assert teacher.score_topk([prompt], [[]], 1.0, 2) == [([], [], [])]  # an empty response costs no request


@pytest.mark.parametrize(
    ("fault", "message", "attempts"),
    [
        ("wrong_id", r"scored token 22 at response position 1 \(token 4 of the prompt\); we sent 21", 1),
        ("short", r"5 prompt log-probs for 6 prompt tokens: none for response position 2", 1),
        ("500", r"failed after 3 attempt\(s\): HTTP 500", 3),  # retried like a judge backend
        ("400", r"failed after 1 attempt\(s\): HTTP 400", 1),  # our request's fault: not retried
    ],
)
def test_a_bad_answer_is_a_clear_error(stand, fault, message, attempts):
    _Stand.fault = fault
    teacher = ServedTeacher(stand, max_retries=2, backoff_s=0.0)
    with pytest.raises(TeacherError, match=message):
        teacher.score([[1, 2, 3]], [[20, 21, 22]])
    assert teacher.attempts == attempts


def test_a_server_that_is_down_or_a_temperature_it_cannot_score_is_a_clear_error(stand):
    down = ServedTeacher("http://127.0.0.1:9/v1", max_retries=1, backoff_s=0.0, timeout_s=2.0)
    with pytest.raises(TeacherError, match="failed after 2 attempt.*ConnectError"):
        down.score([[1]], [[2]])
    with pytest.raises(TeacherError, match="T = 1 only"):
        ServedTeacher(stand).score([[1]], [[2]], temperature=0.7)
    with pytest.raises(ScoreMismatch, match="no log-prob for our token 9"):
        read_scores({"choices": [{"prompt_logprobs": [None, {"3": {"logprob": -1.0, "rank": 1}}]}]}, [1], [9], 0)


def test_the_mode_names_the_served_teacher_and_the_example_composes(tiny_policy):
    cfg = make_cfg(["mode=combine", "mode.teacher=http://127.0.0.1:8002/v1", "mode.teacher_model=teacher"])
    teacher = build_teacher(cfg.mode.teacher, tiny_policy, None, served=served_options(cfg.mode))
    assert isinstance(teacher.engine, ServedTeacher) and teacher.engine.model == "teacher"
    assert teacher.engine.base_url == "http://127.0.0.1:8002/v1" and teacher.engine.max_retries == 2
    from claw.config import validate

    example = make_cfg(["experiment=served_teacher_and_judge"])
    validate(example)
    assert example.judge.kind == "openai" and example.judge.base_url.startswith("http://")
    assert example.mode.teacher.startswith("http://") and example.mode.teacher_model == "teacher"
    assert example.source.min_temperature == example.source.max_temperature == 1.0


@pytest.mark.parametrize("mode", ["combine", "opd"])
def test_a_failed_teacher_leaves_the_turn_to_its_reward(stand, tiny_policy, mode):
    from claw.judge.build import build_judges
    from claw.judge.labelling import Labeller
    from claw.judge.metrics import JudgeStats
    from claw.judge.turn import Turn
    from claw.sources.proxy.render import ChatRenderer
    from tests.test_proxy import JUDGE

    _Stand.fault = "wrong_id"
    teacher = Teacher(ServedTeacher(stand, backoff_s=0.0), tiny_policy.tokenizer)
    counts: Counter[str] = Counter()
    labeller = Labeller(build_judges(JUDGE), teacher, ChatRenderer(tiny_policy.tokenizer).render, mode, 0, 0, 0.0,
                        JudgeStats(), counts)  # fmt: skip
    correction = {"role": "user", "content": "That's wrong, it should be 5. Please recheck the sum."}
    turn = Turn(messages=MSGS, prompt_ids=[1, 2], response_ids=[11, 12], rollout_logprobs=[-1.0, -1.0],
                temperature=1.0, response_text="It is 6.", next_state=[correction])  # fmt: skip
    reason, verdict, sample = asyncio.run(labeller.label(turn))
    assert verdict.hint and counts["teacher_failed"] == 1 and counts["hint_gated"] == 0
    if mode == "combine":
        assert reason == "queued" and sample.reward < 0 and sample.teacher_logprobs is None
        assert sample.info["teacher_failed"] is True and sample.info["hint_gated"] is False
    else:
        assert (reason, sample) == ("teacher_failed", None)


# -- a real vLLM server ---------------------------------------------------------------------------------------------


def _one_step_loss(policy, samples, cfg) -> dict[str, float]:
    """One optimizer step through Lightning on `samples`: the logged train/* metrics."""
    import copy

    import lightning as L
    import torch

    from claw.config import objective_from_cfg
    from claw.module import ClawModule
    from claw.objective import Objective
    from claw.types import collate

    torch.manual_seed(0)
    module = ClawModule(copy.deepcopy(policy.model), Objective(objective_from_cfg(cfg)), lr=1e-3, micro_batch_size=4)
    metrics: dict[str, float] = {}

    class Capture(L.Callback):
        def on_train_batch_end(self, trainer, pl_module, outputs, b, i):
            metrics.update({k: float(v) for k, v in trainer.callback_metrics.items()})

    trainer = L.Trainer(accelerator="cpu", max_steps=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, callbacks=[Capture()])  # fmt: skip
    batch = collate(samples, policy.tokenizer.pad_token_id)
    trainer.fit(
        module, train_dataloaders=torch.utils.data.DataLoader([batch], batch_size=None, collate_fn=lambda b: b)
    )
    return metrics


def test_a_vllm_served_teacher_equals_the_in_process_one(tmp_path):
    """~40 s on 2 CPU cores, most of it the vLLM server's start-up."""
    import time
    from dataclasses import replace

    from claw.engine import HFEngine
    from claw.engine.vllm import vllm_problem
    from claw.engine.vllm_server import VLLMServerEngine
    from claw.models import load_tiny
    from claw.sources.dataset import DatasetSource

    policy = load_tiny(num_heads=2, num_kv_heads=1)  # vLLM's CPU attention has no kernel for head size 16
    if vllm_problem(policy.model.config) is not None:
        pytest.skip("vLLM is not installed here (`make install-vllm`)")
    k = 5
    frozen = build_teacher("frozen", policy, None)
    src = DatasetSource(HFEngine(policy, seed=3), policy.tokenizer, "data/arithmetic/train.jsonl",
                        "data/arithmetic/test.jsonl", n=2, prompts_per_generate=2, max_new_tokens=16, temperature=1.0,
                        teacher=frozen, topk=k)  # fmt: skip
    samples = [s for g in src.make_groups(0, 2) for s in g]  # 4 real hinted turns scored by the in-process teacher
    t0 = time.perf_counter()
    # the teacher's server: vLLM's OpenAI server on the same weights, started the way engine=vllm_server starts one
    server = VLLMServerEngine(policy, seed=0, max_batch_size=8, max_model_len=512, weights_dir=str(tmp_path),
                              extra_args=["--kv-cache-memory-bytes", "268435456"])  # fmt: skip
    try:
        print(f"teacher server up in {time.perf_counter() - t0:.0f} s")
        served = build_teacher(f"{server.url}/v1", policy, None, served={"model": "policy", "backoff_s": 0.1})
        messages = [src.messages(s.info["question"]) for s in samples]
        scores = served.logprobs(
            messages, [s.info["hint"] for s in samples], [s.response_ids for s in samples], 1.0, k
        )
    finally:
        server.close()
    worst = 0.0
    for s, got in zip(samples, scores):
        assert len(got.logprobs) == len(s.response_ids) > 0
        assert got.logprobs == pytest.approx(s.teacher_logprobs, abs=1e-3)
        assert [row for row in got.topk_logprobs] == [pytest.approx(row, abs=1e-3) for row in s.teacher_topk_logprobs]
        for ids, want, lps in zip(got.topk_ids, s.teacher_topk_ids, s.teacher_topk_logprobs):
            tied = any(abs(a - b) < 1e-3 for a, b in zip(lps, lps[1:]))  # near-ties may come back in either order
            assert ids == want or tied
        worst = max([worst, *(abs(a - b) for a, b in zip(got.logprobs, s.teacher_logprobs))])
    print(f"served vs in-process teacher: max |Δ log-prob| {worst:.2e} over {sum(map(len, scores))} tokens")
    served_samples = [
        replace(s, teacher_logprobs=t.logprobs, teacher_topk_ids=t.topk_ids, teacher_topk_logprobs=t.topk_logprobs)
        for s, t in zip(samples, scores)
    ]
    cfg = make_cfg(["mode=opd", f"mode.topk={k}", "mode.topk_coef=0.5", "model=tiny"])
    in_process, over_http = _one_step_loss(policy, samples, cfg), _one_step_loss(policy, served_samples, cfg)
    print(f"one OPD step's loss: in-process {in_process['train/loss']:.6f}, served {over_http['train/loss']:.6f}")
    assert over_http["train/loss"] == pytest.approx(in_process["train/loss"], abs=1e-3, rel=1e-3)
    assert over_http["train/grad_norm"] == pytest.approx(in_process["train/grad_norm"], rel=1e-3)
    assert over_http["train/topk_kl"] == pytest.approx(in_process["train/topk_kl"], abs=1e-3, rel=1e-3)
    # the comparison can tell teachers apart: one 0.05 nats lower on every token moves the loss past its tolerance
    lower = [replace(s, teacher_logprobs=[lp - 0.05 for lp in s.teacher_logprobs]) for s in samples]
    moved = _one_step_loss(policy, lower, cfg)["train/loss"]
    assert moved != pytest.approx(in_process["train/loss"], abs=1e-3, rel=1e-3)
