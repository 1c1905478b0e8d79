"""The cross table of a personalize=per_user run: the adapter of person i rated by person j.

    python experiments/per_user/cross.py runs/per_user/per_user_s0 [...]      (writes <run>/cross.json)

Each person's final adapter (the newest version under <run>/adapters) serves, greedily, the first response to
every other person's held-out tasks (the run's own evaluation: the same tasks, rendering and scorer, outside the
training path). The diagonal (each adapter on its own person) and the base's row are the run's own evaluations
after and before training (eval.json), which decode the same tasks greedily with the same weights. A row is an
adapter, a column a person who rates it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def cross_table(run: Path) -> dict:
    from hydra.utils import instantiate

    from claw.engine.base import BASE
    from claw.engine.vllm import VLLMEngine
    from claw.sources.persona_eval import PersonaEvaluation
    from claw.sources.population import Person
    from claw.sources.proxy.render import ChatRenderer
    from claw.users import Habits, Persona
    from claw.users.data import newest_adapter

    cfg = OmegaConf.load(run / "config.yaml")
    src = cfg.source
    policy = instantiate(cfg.model)
    engine = VLLMEngine(policy, seed=cfg.seed, adapters={"max_resident": 4, "rank": int(cfg.lora.r)})
    try:
        renderer = ChatRenderer(policy.tokenizer)
        people = []
        for name in src.persona:
            persona = Persona.load(name)
            habits = OmegaConf.to_container(src.habits) if isinstance(src.habits, DictConfig) else src.habits
            person = Person(persona, Habits.build(habits, persona.habits), cfg.seed)
            person.eval_tasks = persona.tasks("eval", src.eval_size, seed=cfg.seed)
            person.evaluation = PersonaEvaluation(persona, person.habits, policy.tokenizer, renderer,
                                                  src.max_tool_rounds, repair=False)  # fmt: skip
            people.append(person)
        engine.serve_adapter(BASE, 0, str(run / "adapters" / "base" / "v0"))
        evals = json.loads((run / "eval.json").read_text())
        served = {}
        for p in people:
            path = newest_adapter(run, p.name)
            if path is None:
                raise RuntimeError(f"{run}: no adapter for {p.name}")
            engine.serve_adapter(p.name, int(path.name[1:]), str(path))
            served[p.name] = path.name
        from claw.engine.base import SamplingParams

        greedy = SamplingParams(temperature=0.0, max_new_tokens=src.eval_max_new_tokens or src.max_new_tokens)
        before = evals["before"]["people"]
        table: dict[str, dict[str, float]] = {"base": {p.name: before[p.name]["score"] for p in people}}
        for adapter in (p.name for p in people):
            row = {}
            for rater in people:  # rater's tasks, decoded as `adapter`'s requests are
                if rater.name == adapter:
                    row[rater.name] = evals["after"]["people"][adapter]["score"]
                    continue
                result = rater.evaluation.evaluate(rater.eval_tasks, engine.generate, _as(greedy, adapter), version=0)
                row[rater.name] = result.score
            table[adapter] = row
            print(
                f"{run.name}: adapter {adapter:>10}: " + "  ".join(f"{k} {v:.3f}" for k, v in row.items()), flush=True
            )
    finally:
        engine.close()
    out = {"adapters": served, "table": table, "eval_size": src.eval_size}
    (run / "cross.json").write_text(json.dumps(out, indent=1))
    return out


def _as(sampling, user: str):
    import dataclasses

    return dataclasses.replace(sampling, user=user)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        cross_table(Path(arg))
