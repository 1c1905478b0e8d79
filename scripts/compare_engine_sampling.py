"""Do two engines sample the same policy equally well? First responses to the student persona's 64
held-out tasks, sampled at T = 0.7 (the training temperature) 4 times each, rated by the persona.

    python scripts/compare_engine_sampling.py hf
    python scripts/compare_engine_sampling.py vllm

Measured (SmolLM2, untrained): hf mean rating 0.449, all criteria met 16/256, 82.6 tokens;
vllm 0.442, 15/256, 79.5 tokens — the same distribution, as the log-prob tests say.
"""

import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from claw.engine import SamplingParams, build_engine  # noqa: E402
from claw.models import load_smollm2  # noqa: E402
from claw.sources.proxy.render import ChatRenderer  # noqa: E402
from claw.users.persona import Persona  # noqa: E402

kind = sys.argv[1]
policy = load_smollm2()
persona = Persona.load("student")
tasks = persona.tasks("eval", 64, seed=0)
r = ChatRenderer(policy.tokenizer)
prompts = [
    r.render([{"role": "user", "content": persona.opening(t, random.Random(f"eval/{i}"))}], None)
    for i, t in enumerate(tasks)
]
eng = build_engine(kind, policy, seed=0, max_batch_size=64)
scores, allpass, lengths = [], [], []
for _rep in range(4):
    gens = eng.generate(prompts, SamplingParams(temperature=0.7, max_new_tokens=96))
    for g, t in zip(gens, tasks):
        rating = persona.rate(
            [{"role": "assistant", "content": policy.tokenizer.decode(g.response_ids, skip_special_tokens=True)}], t
        )
        scores.append(rating.score)
        allpass.append(all(rating.passed.values()))
        lengths.append(len(g.response_ids))
print(
    f"{kind}: mean rating {statistics.mean(scores):.3f}, all criteria met {sum(allpass)}/{len(allpass)}, "
    f"mean length {statistics.mean(lengths):.1f} tokens"
)
eng.close()
