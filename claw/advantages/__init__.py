"""Advantage estimators: pure functions in one registry (`ADVANTAGES`).

Uniform signature: ``fn(inputs: AdvantageInputs, **kwargs) -> AdvantageResult`` (see `base.py`).

| name       | A                                                    | needs                      |
|------------|------------------------------------------------------|----------------------------|
| `grpo`     | (r − mean_g r) / (std_g r + ε)                       | groups                     |
| `dr_grpo`  | r − mean_g r                                         | groups                     |
| `rloo`     | r − mean of the other samples of the group           | groups                     |
| `baseline` | r − b_source (running EMA per source)                | groups of one fine         |
| `opd`      | w_opd · (log π_teacher − log π_old), per token       | teacher log-probs          |
| `combine`  | w_rl · A_rl + w_opd · A_opd                          | reward and/or teacher      |
| `gae`      | GAE(γ, λ) over token rewards, with a critic          | critic values (algo=ppo)   |
"""

from claw.advantages import baseline, gae, grpo, opd  # noqa: F401  (registration)
from claw.advantages.base import ADVANTAGES, AdvantageInputs, AdvantageResult
from claw.advantages.baseline import RunningBaseline

__all__ = ["ADVANTAGES", "AdvantageInputs", "AdvantageResult", "RunningBaseline"]
