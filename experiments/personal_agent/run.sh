#!/usr/bin/env bash
# The personal-agent matrix of issue 8 on the embedded SmolLM2 (CPU): student × {rl, opd, combine} × 2 seeds and
# teacher × combine × 2 seeds, each evaluated on 64 held-out tasks before, every 4 steps and after.
#   bash experiments/personal_agent/run.sh            (about 10 min per run on 2 cores)
#   python -m claw.compare runs/personal_agent --metric eval/score --curve rollout/reward_mean --out experiments/personal_agent/compare.png
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
OUT=${OUT:-runs/personal_agent}
run() {  # persona mode seed
  local dir="$OUT/$1_$2_s$3"
  if [ -f "$dir/summary.json" ]; then echo "done: $dir"; return; fi
  $PY train.py experiment=personal_agent source.persona="$1" mode="$2" seed="$3" run_dir="$dir" "${@:4}"
}
for seed in 0 1; do
  for mode in combine rl opd; do run student "$mode" "$seed"; done
  run teacher combine "$seed"
done
