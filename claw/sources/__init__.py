"""Where samples come from: every source implements `claw.rollout.source.Source` and puts groups of
samples in the `RolloutQueue` the datamodule reads.

- `claw.sources.proxy` (`source=proxy`): an OpenAI-compatible server; live turns, judged when their next
  state arrives (`claw.judge.labelling`).
- `claw.sources.simulated_user` (`source=simulated_user`): personas that talk to that proxy over HTTP.
- `claw.sources.dataset` (`source=dataset`): prompts with verifiable answers, n samples per prompt.
"""
