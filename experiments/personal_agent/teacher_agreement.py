"""Does the hinted teacher prefer what the user prefers? Read back from finished runs' samples.

    python experiments/personal_agent/teacher_agreement.py runs/personal_agent [--json out.json]

For every finished run under the folder (a `summary.json` beside its `samples.jsonl`), per rollout batch
(the samples of one policy version): the Pearson correlation, over the samples with an accepted hint and a
reward, of each sample's mean teacher-student gap, mean_t(log π_teacher − log π_behaviour), with its
reward — `claw.advantages.opd.teacher_agreement` (the behaviour log-probs stand in for π_old: equal at
staleness 0). Printed: the mean over the run's
batches and how many batches were measurable. Positive: the replies the teacher favours are those the user
complained about least, so the OPD term pushes where the reward does. Read from `samples.jsonl` alone.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from claw.advantages import AdvantageInputs  # noqa: E402
from claw.advantages.opd import teacher_agreement  # noqa: E402
from experiments.personal_agent.end_of_turn_gap import read_finished_runs  # noqa: E402


def batch_agreement(samples: list[dict]) -> float | None:
    """`teacher_agreement` over one batch's samples (None when unmeasurable)."""
    rows = [s for s in samples if s.get("teacher_logprobs") and s.get("reward") is not None]
    if len(rows) < 3:
        return None
    width = max(len(s["response_ids"]) for s in rows)

    def pad(xs: list[float]) -> list[float]:
        return list(xs) + [0.0] * (width - len(xs))

    inputs = AdvantageInputs(
        response_mask=torch.tensor([pad(s.get("response_mask") or [1] * len(s["response_ids"])) for s in rows]),
        rewards=torch.tensor([float(s["reward"]) for s in rows]),
        group_index=torch.arange(len(rows)),
        old_logprobs=torch.tensor([pad(s["rollout_logprobs"]) for s in rows]),
        teacher_logprobs=torch.tensor([pad(s["teacher_logprobs"]) for s in rows]),
        teacher_mask=torch.ones(len(rows)),
    )
    value = teacher_agreement(inputs)
    return None if value is None else float(value)


def run_agreement(samples: Path) -> dict | None:
    """{batches, measured, agreement} for one run (None when no batch is measurable)."""
    by_version: dict[int, list[dict]] = defaultdict(list)
    for line in samples.read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        by_version[sample.get("policy_version", 0)].append(sample)
    values = [v for v in (batch_agreement(b) for _, b in sorted(by_version.items())) if v is not None]
    if not values:
        return None
    return {"batches": len(by_version), "measured": len(values), "agreement": mean(values), "first": values[0]}


def main() -> None:
    rows, args = read_finished_runs(__doc__, run_agreement)
    print("| run | batches measured | agreement, first batch | mean over batches |")
    print("|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {r['measured']} of {r['batches']} | {r['first']:+.2f} | {r['agreement']:+.2f} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
