#!/usr/bin/env bash
# Guarded updates: a destructive learning rate — optim.lr 30x the default (3e-5 -> 9e-4) — on the
# default job (simulated student persona), seed 0, with the guard on and off; the served rating is evaluated
# after every step (eval_every=1: what the engine serves, i.e. the last promoted version when guarded).
#
#   bash experiments/guarded_updates/run.sh            # both runs, then the plot (hours on 2 CPU cores)
#   bash experiments/guarded_updates/run.sh validate   # OPE vs held-out: every candidate promoted, 3 seeds
#   EXTRA="model=tiny steps=2 source.eval_size=8" OUT=/tmp/gu bash experiments/guarded_updates/run.sh   # smoke test
#
# OUT (runs/guarded_updates), STEPS (12), GUARD (probe: OPE + drift bound + probe set), SEEDS (0 1 2), EXTRA (more overrides).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-runs/guarded_updates}
STEPS=${STEPS:-12}
GUARD=${GUARD:-probe}
SEEDS=${SEEDS:-0 1 2}
PY=${PY:-.venv/bin/python}
read -r -a extra <<< "${EXTRA:-}"
LR=9e-4   # 30 x conf/train.yaml's optim.lr (3e-5)
HERE=experiments/guarded_updates

case "${1:-destructive}" in
destructive)
  "$PY" train.py optim.lr=$LR seed=0 steps="$STEPS" eval_every=1 guard=none run_dir="$OUT/unguarded" "${extra[@]}"
  "$PY" train.py optim.lr=$LR seed=0 steps="$STEPS" eval_every=1 guard="$GUARD" run_dir="$OUT/guarded" "${extra[@]}"
  "$PY" $HERE/plot.py "$OUT/guarded" "$OUT/unguarded" --out "$OUT/decisions.png"
  ;;
validate)
  # Shadow mode (guard.observe=true): every check runs and every candidate is promoted, so eval step_k rates
  # candidate k, the one the guard's OPE estimated at step k; default learning rate and 3x it, to spread the
  # checkpoints' ratings. The personal-agent matrix runs carry the same shadow guard (experiments/personal_agent).
  dirs=()
  for seed in $SEEDS; do
    for lr in 3e-5 9e-5; do
      d="$OUT/validate/seed$seed-lr$lr"
      "$PY" train.py optim.lr=$lr seed="$seed" steps="$STEPS" eval_every=1 guard=ope guard.observe=true \
        run_dir="$d" "${extra[@]}"
      dirs+=("$d")
    done
  done
  "$PY" $HERE/ope_validation.py "${dirs[@]}" --json "$OUT/validate/ope_validation.json"
  ;;
*)
  echo "usage: $0 [destructive|validate]" >&2
  exit 2
  ;;
esac
