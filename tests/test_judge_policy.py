"""The policy backend: the colocated engine (tiny random model) judges through the chat template."""

import asyncio

from claw.config import compose_config
from claw.engine import HFEngine, SamplingParams
from claw.judge import PolicyBackend, PRMJudge, Turn, build_judges

TURN = Turn(
    messages=[{"role": "user", "content": "Say hi."}],
    response_text="Hi!",
    next_state=[{"role": "user", "content": "Thanks!"}],
)


class Counting:
    """The real engine, recording what it was asked to generate."""

    def __init__(self, engine):
        self.engine, self.calls = engine, []
        self.version = engine.version

    def generate(self, prompts, sampling):
        self.calls.append((prompts, sampling))
        return self.engine.generate(prompts, sampling)


def test_policy_backend_generates_from_the_chat_template(tiny_policy):
    tok = tiny_policy.tokenizer
    engine = Counting(HFEngine(tiny_policy, seed=0))
    backend = PolicyBackend(engine, tok, SamplingParams(stop_token_ids=(7,)))
    text = asyncio.run(backend.complete([{"role": "user", "content": "Judge this."}], temperature=0.6, max_tokens=6))
    assert isinstance(text, str)
    [(prompts, sampling)] = engine.calls
    assert (sampling.temperature, sampling.max_new_tokens, sampling.stop_token_ids) == (0.6, 6, (7,))
    assert "Judge this." in tok.decode(prompts[0]) and all(isinstance(i, int) for i in prompts[0])


def test_policy_judge_abstains_on_a_random_model(tiny_policy):
    """A random model writes no box: every vote abstains, the score is 0, and that is not an error."""
    cfg = compose_config(["judge=policy", "judge.max_tokens=8", "judge.m=2"])
    judges = build_judges(cfg.judge, engine=HFEngine(tiny_policy, seed=0), tokenizer=tiny_policy.tokenizer)
    assert isinstance(judges.backend, PolicyBackend) and isinstance(judges.prm, PRMJudge)
    result = asyncio.run(judges.prm.judge(TURN))
    assert (result.score, result.votes, result.n_abstain, result.error) == (0, [None, None], 2, None)
