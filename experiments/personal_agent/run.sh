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
# The order puts one full seed of the three modes first, then the second seed, so a cut-short matrix
# still compares the modes.
run teacher combine 0
run student combine 0
run student rl 0
run student opd 0
run student combine 1
run student opd 1
run student rl 1
run teacher combine 1
