#!/usr/bin/env bash
# The per-user experiment on the embedded SmolLM2, 2 CPU cores:
#   bash experiments/per_user/run.sh GROUP [GROUP ...]
#   python experiments/per_user/report.py runs/per_user      (tables, the cross table, results.json, ratings.png)
# Every run is `python train.py experiment=per_user` with the overrides listed; a run whose summary.json exists is
# skipped, so the script resumes. A finished run's checkpoint is removed (KEEP_CHECKPOINTS=1 keeps it); per_user
# keeps its adapters under <run>/adapters, which the cross table reads.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
OUT=${OUT:-runs/per_user}
run() {  # name overrides...
  local dir="$OUT/$1"
  if [ -f "$dir/summary.json" ]; then echo "done: $dir"; return; fi
  echo "[$(date +%H:%M:%S)] $1"
  $PY train.py experiment=per_user run_dir="$dir" "${@:2}" > "$OUT/$1.log" 2>&1 || echo "FAILED: $1 (see $OUT/$1.log)"
  if [ -f "$dir/summary.json" ] && [ "${KEEP_CHECKPOINTS:-0}" = 0 ]; then rm -f "$dir"/checkpoints/*.ckpt; fi
}
mkdir -p "$OUT"
SEEDS=${SEEDS:-0 1 2}
for g in "$@"; do
  case $g in
    shared)   for s in $SEEDS; do run "shared_s$s" seed=$s personalize=shared; done ;;
    per_user) for s in $SEEDS; do run "per_user_s$s" seed=$s personalize=per_user; done ;;
    pilot)    for lr in ${LRS:-3e-4 1e-3}; do run "pilot_per_user_lr${lr}_s0" personalize=per_user personalize.lr=$lr; done ;;
    *) echo "unknown group $g"; exit 2 ;;
  esac
done
