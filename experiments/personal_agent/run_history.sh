#!/usr/bin/env bash
# The personal-agent matrix on the embedded SmolLM2, 2 CPU cores, ~10 min a run:
#   bash experiments/personal_agent/run.sh [group ...]      groups: see the case below (e.g. groups, teachergraded, hfgraded)
#   python experiments/personal_agent/table.py runs/personal_agent      (the table; writes results.json)
# Every run is `python train.py` (the main job's defaults: mode=combine, schedule=lockstep, max_turns=1) with
# the overrides listed; a run whose summary.json exists is skipped, so the script resumes where it stopped.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-.venv/bin/python}
OUT=${OUT:-runs/personal_agent}
run() {  # name overrides...
  local dir="$OUT/$1"
  if [ -f "$dir/summary.json" ]; then echo "done: $dir"; return; fi
  echo "[$(date +%H:%M:%S)] $1"
  $PY train.py run_dir="$dir" "${@:2}" > "$OUT/$1.log" 2>&1 || echo "FAILED: $1 (see $OUT/$1.log)"
}
mkdir -p "$OUT"
SHADOW="guard=ope guard.observe=true eval_every=2"   # the shadow guard (guard.observe): OPE of every candidate, nothing held
for group in "${@:-core modes heldout hf teacher hfrepeat repeat seeds}"; do
  for g in $group; do
    case $g in
      # 2026-12-06: the main job on the final code (the teacher's ceilings are headroom.py and imitation.py)
      s27a)    run main_s0_s27; run main_s0_hf_s27 engine=hf ;;
      # a teacher that can write the comment: the imitated model (imitation.py --save) as mode.teacher, a stand-in
      # for the larger checkpoint this machine cannot install (it was shown written comments: a diagnostic, not a result)
      s27b)    run teacher_combine_s0_imitated_teacher source.persona=teacher mode.teacher=$PWD/runs/headroom/imitated_teacher_s0 ;;
      s27c)    run teacher_combine_s0_imitated_teacher_topk8 source.persona=teacher mode.teacher=$PWD/runs/headroom/imitated_teacher_s0 \
                 mode.topk=8 mode.topk_coef=1 ;;
      s27d)    for s in ${SEEDS:-1 2}; do run "teacher_combine_s${s}_imitated_teacher_topk8" source.persona=teacher seed=$s \
                 mode.teacher=$PWD/runs/headroom/imitated_teacher_s0 mode.topk=8 mode.topk_coef=1; done ;;
      # 2026-12-06: more turns per update (batch_size; never screened at T = 0.4), teacher first
      s26a)    run teacher_combine_s0_bs32 source.persona=teacher batch_size=32 max_queue_size=64
               run teacher_rl_s0_bs32 source.persona=teacher mode=rl batch_size=32 max_queue_size=64 ;;
      s26c)    run teacher_rl_s0_bs32_lr1e4 source.persona=teacher mode=rl batch_size=32 max_queue_size=64 optim.lr=1e-4 ;;
      s26d)    run teacher_rl_s0_bs16_lr1e4 source.persona=teacher mode=rl batch_size=16 max_queue_size=32 optim.lr=1e-4 ;;
      s26e)    for s in 2 1; do run "teacher_rl_s${s}_bs16" source.persona=teacher mode=rl seed=$s batch_size=16 max_queue_size=32; done ;;
      s26f)    run main_s0_s26; run main_s0_hf_s26 engine=hf ;;   # the main job on the final code, both engines
      s26g)    run main_s0_s26b   # the main job again with release_memory on (main_s0_s26 ran on the code before it: peak memory)
               run main_s0_s26_norelease release_memory=false ;;
      s26h)    run student_rl_s1_bs16 mode=rl seed=1 batch_size=16 max_queue_size=32 ;;   # rl's lottery seed (0.578 at batch 8)
      s26i)    run heldout_parent_checker_combine_s1_bs16 source.persona=personas/heldout/parent_checker.yaml seed=1 \
                 batch_size=16 max_queue_size=32 ;;   # the weak held-out seed (0.363 at batch 8)
      s26j)    run teacher_combine_s0_topk8_t04 source.persona=teacher mode.topk=8 mode.topk_coef=1 ;;   # top-K distillation at T = 0.4:
      s26k)    run teacher_combine_s1_topk8_t04 source.persona=teacher seed=1 mode.topk=8 mode.topk_coef=1 ;;  # raises tokens never sampled
      s26b)    run teacher_combine_s0_bs16 source.persona=teacher batch_size=16 max_queue_size=32
               run teacher_rl_s0_bs16_t04 source.persona=teacher mode=rl batch_size=16 max_queue_size=32 ;;
      core)    run student_combine_s0; run student_combine_s1 seed=1; run student_combine_s2 seed=2 ;;
      modes)   run student_rl_s0 mode=rl; run student_opd_s0 mode=opd ;;
      teacher) run teacher_combine_s0 source.persona=teacher ;;
      center)  run student_combine_s1_opdcenter seed=1 mode.opd_center=true
               run heldout_parent_checker_combine_s0_opdcenter source.persona=personas/heldout/parent_checker.yaml mode.opd_center=true
               run heldout_bookkeeper_combine_s0_opdcenter source.persona=personas/heldout/bookkeeper.yaml mode.opd_center=true ;;
      heldout) for p in parent_checker bookkeeper simple_english; do run "heldout_${p}_combine_s0" source.persona=personas/heldout/$p.yaml; done ;;
      hf)      run student_combine_hf_s0 engine=hf ;;
      hfrepeat) run student_combine_hf_s0_repeat engine=hf ;;
      repeat)  run student_combine_s0_repeat ;;
      graded0r) run student_combine_s0_graded_repeat ;;   # the default (graded) again: same config and seed, same result?
      hfgraded) run student_combine_hf_s0_graded engine=hf; run student_combine_hf_s0_graded_repeat engine=hf ;;
      groups)  for s in 0 1 2; do run "student_combine_s${s}_n4_grpo" seed=$s source.n=4 algo=grpo; done ;;
      current) for s in 0 1 2; do run "student_combine_s${s}_current" seed=$s mode.teacher=current; done ;;
      current0) run student_combine_s0_current mode.teacher=current ;;
      current12) for s in 1 2; do run "student_combine_s${s}_current" seed=$s mode.teacher=current; done ;;
      matrix3) run student_rl_s0_graded mode=rl; run student_rl_s2_graded mode=rl seed=2
               run student_opd_s1 mode=opd seed=1; run student_opd_s2 mode=opd seed=2
               run teacher_combine_s0_graded source.persona=teacher
               run student_combine_hf_s0_graded engine=hf; run student_combine_hf_s0_graded_repeat engine=hf
               run teacher_rl_s0_graded source.persona=teacher mode=rl; run teacher_opd_s0 source.persona=teacher mode=opd ;;
      wopd01) for s in 0 1 2; do run "student_combine_s${s}_wopd01" seed=$s mode.w_opd=0.1; done ;;
      default) run student_combine_s0_final ;;   # the main job as make train runs it, on the final code
      hf0)     run student_combine_hf_s0 engine=hf; run student_combine_hf_s0_repeat engine=hf ;;
      hf12)    for s in 1 2; do run "student_combine_hf_s$s" engine=hf seed=$s; done ;;
      heldout3) for p in parent_checker bookkeeper simple_english; do run "heldout_${p}_combine_s0_v3" source.persona=personas/heldout/$p.yaml; done ;;
      teacher0) run teacher_rl_s0 source.persona=teacher mode=rl; run teacher_opd_s0 source.persona=teacher mode=opd ;;
      teacher12) for s in 1 2; do run "teacher_rl_s$s" source.persona=teacher mode=rl seed=$s; run "teacher_opd_s$s" source.persona=teacher mode=opd seed=$s; done ;;
      final)   # the matrix of 2026-12-01 (47a3792) on the final defaults (combine: w_opd=0.1, graded credit)
               for s in 0 1 2; do run "teacher_combine_s$s" source.persona=teacher seed=$s; done
               run student_combine_hf_s0 engine=hf; run student_combine_hf_s0_repeat engine=hf
               for p in parent_checker bookkeeper simple_english; do run "heldout_${p}_combine_s0_v3" source.persona=personas/heldout/$p.yaml; done
               for s in 0 1 2; do run "teacher_rl_s$s" source.persona=teacher mode=rl seed=$s; done
               for s in 0 1 2; do run "teacher_opd_s$s" source.persona=teacher mode=opd seed=$s; done
               for s in 1 2; do run "student_combine_hf_s$s" engine=hf seed=$s; done ;;
      # 2026-12-01 (95aac44): the teacher matrix on the current defaults, under the shadow guard (what is served is
      # unchanged; guard.jsonl gives the OPE estimate of every candidate, eval_every=2 its held-out rating)
      final4a) for s in 0 1; do run "teacher_rl_s$s" source.persona=teacher mode=rl seed=$s $SHADOW
                                run "teacher_opd_s$s" source.persona=teacher mode=opd seed=$s $SHADOW; done
               run teacher_combine_s2 source.persona=teacher seed=2 $SHADOW ;;
      final4b) run student_combine_hf_s1 engine=hf seed=1
               run teacher_rl_s2 source.persona=teacher mode=rl seed=2 $SHADOW
               run teacher_opd_s2 source.persona=teacher mode=opd seed=2 $SHADOW
               run student_combine_hf_s2 engine=hf seed=2 ;;
      overlong) run teacher_combine_s0_overlong05 source.persona=teacher algo.overlong.mode=penalty
                run teacher_combine_s0_overlongmask source.persona=teacher algo.overlong.mode=mask
                run student_combine_s0_v4 algo.overlong.mode=penalty $SHADOW ;;
      points4) run teacher_combine_s0_points4 source.persona=teacher judge.credit_points=4
               run student_combine_s0_points4 judge.credit_points=4
               run teacher_combine_s1_points4 source.persona=teacher seed=1 judge.credit_points=4
               run student_combine_s1_points4 seed=1 judge.credit_points=4 ;;
      # 2026-12-01 (f149306): linear credit (judge.credit_points=4) on the third seed, the rl arms and the held-out
      # personas (opd runs no reward judge, so its arms do not depend on the credit); two queues, run side by side
      p4a)     run teacher_combine_s2_points4 source.persona=teacher seed=2 judge.credit_points=4
               for s in 0 1 2; do run "teacher_rl_s${s}_points4" source.persona=teacher mode=rl seed=$s judge.credit_points=4; done
               run heldout_parent_checker_combine_s0_points4 source.persona=personas/heldout/parent_checker.yaml judge.credit_points=4 ;;
      p4b)     run student_combine_s2_points4 seed=2 judge.credit_points=4
               for s in 0 1 2; do run "student_rl_s${s}_points4" mode=rl seed=$s judge.credit_points=4; done
               for p in bookkeeper simple_english; do
                 run "heldout_${p}_combine_s0_points4" source.persona=personas/heldout/$p.yaml judge.credit_points=4; done ;;
      # then a KL anchor to the initial policy (algo.kl_coef, k2) against the teacher's drift into long replies
      p4c)     run teacher_combine_s2_points4_kl01 source.persona=teacher seed=2 judge.credit_points=4 algo.kl_coef=0.1
               run student_combine_hf_s0_points4 engine=hf judge.credit_points=4 ;;
      # and the OPD term without its push against stopping (mode.opd_skip_end), on the new default credit
      p4e)     run teacher_combine_s2_skipend source.persona=teacher seed=2 mode.opd_skip_end=true
               run student_combine_s0_skipend mode.opd_skip_end=true
               run heldout_parent_checker_combine_s0_skipend source.persona=personas/heldout/parent_checker.yaml mode.opd_skip_end=true
               run teacher_combine_s0_skipend source.persona=teacher mode.opd_skip_end=true
               run student_combine_s1_skipend seed=1 mode.opd_skip_end=true
               run teacher_combine_s1_skipend source.persona=teacher seed=1 mode.opd_skip_end=true
               run student_combine_s2_skipend seed=2 mode.opd_skip_end=true ;;
      hf12p4)  for s in 1 2; do run "student_combine_hf_s${s}_points4" engine=hf seed=$s; done ;;   # hf at the new default
      final5)  run student_combine_s0_final5 ;;   # the main job as make train runs it, on the final code of 2026-12-01 (b132ace)
      # 2026-12-01 (a17b292): screens on the teacher persona (seed 0 first), then the lr that moved it on three seeds of both
      s6tk)    run teacher_combine_s0_topk8 source.persona=teacher mode.topk=8 mode.topk_coef=1.0 ;;   # top-K distillation
      s6grpo)  run teacher_combine_s0_grpo4 source.persona=teacher source.n=4 algo=grpo ;;          # 4 sessions per task
      s6lr)    for s in 0 1 2; do run "teacher_combine_s${s}_lr1e4" source.persona=teacher seed=$s optim.lr=1e-4
                                  run "student_combine_s${s}_lr1e4" seed=$s optim.lr=1e-4; done ;;
      # what makes the teacher's replies run long at lr 1e-4: the OPD term (rl alone), its end-of-turn push, the budget
      s6len)   for s in 1 0 2; do run "teacher_rl_s${s}_lr1e4" source.persona=teacher seed=$s mode=rl optim.lr=1e-4; done
               run teacher_combine_s1_lr1e4_overlong05 source.persona=teacher seed=1 optim.lr=1e-4 algo.overlong.mode=penalty
               run teacher_combine_s1_lr1e4_skipend source.persona=teacher seed=1 optim.lr=1e-4 mode.opd_skip_end=true
               run teacher_combine_s2_lr1e4_overlong05 source.persona=teacher seed=2 optim.lr=1e-4 algo.overlong.mode=penalty ;;
      # LoRA (r 8 on q/k/v/o) at 10x the full-weight lr: a smaller update space against the teacher's drift
      s6lora)  run teacher_combine_s1_lora3e4 source.persona=teacher seed=1 lora.enabled=true optim.lr=3e-4
               run teacher_combine_s0_lora3e4 source.persona=teacher lora.enabled=true optim.lr=3e-4 ;;
      # lr 1e-4 with the OPD term's end-of-turn push removed (seed 1 kept its length where lr 1e-4 alone did not)
      s6skip)  for s in 0 2; do run "teacher_combine_s${s}_lr1e4_skipend" source.persona=teacher seed=$s optim.lr=1e-4 mode.opd_skip_end=true; done
               run student_combine_s0_lr1e4_skipend optim.lr=1e-4 mode.opd_skip_end=true ;;
      # the hint in the system message instead of the user's (scripts/probe_hints.py: the teacher persona's hinted
      # model rates below the unhinted one when the hint is in the user turn, level when it is in the system message)
      s7hint)  for s in 0 1 2; do run "teacher_combine_s${s}_sysHint" source.persona=teacher seed=$s mode.hint_role=system 'mode.hint_format="{content} {hint}"'; done
               for s in 0 1 2; do run "student_combine_s${s}_sysHint" seed=$s mode.hint_role=system 'mode.hint_format="{content} {hint}"'; done
               for p in parent_checker bookkeeper simple_english; do
                 run "heldout_${p}_combine_s0_sysHint" source.persona=personas/heldout/$p.yaml mode.hint_role=system 'mode.hint_format="{content} {hint}"'
               done
               run heldout_parent_checker_combine_s1 source.persona=personas/heldout/parent_checker.yaml seed=1
               run heldout_parent_checker_combine_s1_sysHint source.persona=personas/heldout/parent_checker.yaml seed=1 mode.hint_role=system 'mode.hint_format="{content} {hint}"' ;;
      s8contrast) C='mode.hint_contrast="That'"'"'s not what I wanted. Please try again."'   # the guided teacher
               for s in 0 1 2; do run "teacher_combine_s${s}_contrast" source.persona=teacher seed=$s "$C"; done
               for s in 0 1 2; do run "student_combine_s${s}_contrast" seed=$s "$C"; done
               run heldout_parent_checker_combine_s1_contrast source.persona=personas/heldout/parent_checker.yaml seed=1 "$C"
               run student_combine_s0_contrast05 seed=0 "$C" mode.hint_contrast_scale=0.5   # half the contrast
               run heldout_parent_checker_combine_s1_contrast05 source.persona=personas/heldout/parent_checker.yaml seed=1 "$C" mode.hint_contrast_scale=0.5
               for p in parent_checker bookkeeper simple_english; do
                 run "heldout_${p}_combine_s0_contrast" source.persona=personas/heldout/$p.yaml "$C"
               done ;;
      s9heldout) H=personas/heldout   # 2026-12-02: rl alone on the held-out personas, and combine's missing seeds
               for s in 0 1 2; do run "heldout_parent_checker_rl_s$s" source.persona=$H/parent_checker.yaml mode=rl seed=$s; done
               run heldout_parent_checker_combine_s2 source.persona=$H/parent_checker.yaml seed=2
               for p in bookkeeper simple_english; do
                 for s in 0 1 2; do run "heldout_${p}_rl_s$s" source.persona=$H/$p.yaml mode=rl seed=$s; done
                 for s in 1 2; do run "heldout_${p}_combine_s$s" source.persona=$H/$p.yaml seed=$s; done
               done
               run student_combine_s0_final9 ;;   # the main job on the final code of 2026-12-02 (9fb8055)
      s9wopd)  for s in 0 1 2; do run "heldout_parent_checker_combine_s${s}_wopd003" source.persona=personas/heldout/parent_checker.yaml seed=$s mode.w_opd=0.03
                                run "student_combine_s${s}_wopd003" seed=$s mode.w_opd=0.03; done ;;
      # 2026-12-03: the hint as credit (mode.opd_role=credit: the reward decides how hard and which way, the
      # hinted teacher only where in the turn); screens on seed 0 first, in two lanes (s12a / s12b run side by side)
      s12a)    run heldout_parent_checker_credit_s0 source.persona=personas/heldout/parent_checker.yaml mode.opd_role=credit
               run student_credit_s0 mode.opd_role=credit ;;
      s12b)    run teacher_credit_s0 source.persona=teacher mode.opd_role=credit ;;
      # the credit from the hint's own effect: with the current policy as teacher (staleness 0, lockstep) the gap is
      # log π(a | s + hint) − log π(a | s), what the complaint does to each token, without the frozen teacher's pull
      # back to the initial weights (which grows as the policy trains: credit_spread 0.23 → 0.83 on the parent)
      s12c)    run heldout_parent_checker_creditcur_s0 source.persona=personas/heldout/parent_checker.yaml mode.opd_role=credit mode.teacher=current ;;
      # is it the hint or the teacher? The same combine with the hint left out of the teacher's context
      # (hint_format "{content}"): the OPD term becomes log π_init(a | s) − log π_old(a | s), a pull back to the
      # initial weights on the corrected turns, and nothing of what the user said
      s12e)    run student_nohint_s0 'mode.hint_format="{content}"' ;;
      s12g)    for s in 1 2; do run "student_nohint_s$s" 'mode.hint_format="{content}"' seed=$s; done ;;
      s12h)    for s in 1 2; do run "heldout_parent_checker_nohint_s$s" source.persona=personas/heldout/parent_checker.yaml 'mode.hint_format="{content}"' seed=$s; done ;;
      s12main) run main_s0_s12 ;;   # the main job on the final code of 2026-12-03 (the same numbers again?)
      s12t)    for s in ${SEEDS:-0 1 2}; do run "teacher_nohint_s$s" source.persona=teacher 'mode.hint_format="{content}"' seed=$s; done ;;   # is it the hint or the teacher, on the teacher persona
      s12i)    run heldout_parent_checker_credit_s1 source.persona=personas/heldout/parent_checker.yaml mode.opd_role=credit seed=1 ;;
      s12j)    run student_credit_s1 mode.opd_role=credit seed=1 ;;
      s12t2)   run teacher_nohint_s2 source.persona=teacher 'mode.hint_format="{content}"' seed=2 ;;
      # 2026-12-03: the OPD term without the opening (mode.opd_skip_start=5). The hint's own effect on the gap
      # sits on tokens 1-5 (-0.60 / -0.35 / -0.18 against -0.09 after): leave how a reply opens to the reward.
      # Two lanes side by side (s13a / s13b), seed 0 first on the three personas, then seeds 1 and 2.
      s13a)    run heldout_parent_checker_skip5_s0 source.persona=personas/heldout/parent_checker.yaml mode.opd_skip_start=5
               run teacher_skip5_s0 source.persona=teacher mode.opd_skip_start=5 ;;
      s13b)    run student_skip5_s0 mode.opd_skip_start=5
               run heldout_parent_checker_skip5_s1 source.persona=personas/heldout/parent_checker.yaml mode.opd_skip_start=5 seed=1 ;;
      s13c)    for s in ${SEEDS:-1 2}; do run "teacher_skip5_s$s" source.persona=teacher mode.opd_skip_start=5 seed=$s; done ;;
      s13d)    run heldout_parent_checker_skip5_s2 source.persona=personas/heldout/parent_checker.yaml mode.opd_skip_start=5 seed=2
               for s in ${SEEDS:-1 2}; do run "student_skip5_s$s" mode.opd_skip_start=5 seed=$s; done ;;
      # The teacher's matrix again with its verdict check fixed (a conceding opening's "right" is no verdict), and the
      # system placement on it; two lanes side by side (s14a / s14b). The runs these names replace are *_v2 in results.json.
      s14a)    T="source.persona=teacher"; SYS="mode.hint_role=system"
               run teacher_combine_s0 $T; run teacher_rl_s1 $T mode=rl seed=1; run teacher_combine_s2 $T seed=2
               run teacher_opd_s0 $T mode=opd; run teacher_opd_s2 $T mode=opd seed=2
               run teacher_combine_s1_sysHint $T seed=1 $SYS 'mode.hint_format="{content} {hint}"' ;;
      s14b)    T="source.persona=teacher"; SYS="mode.hint_role=system"
               run teacher_rl_s0 $T mode=rl; run teacher_combine_s1 $T seed=1; run teacher_rl_s2 $T mode=rl seed=2
               run teacher_opd_s1 $T mode=opd seed=1
               for s in 0 2; do run "teacher_combine_s${s}_sysHint" $T seed=$s $SYS 'mode.hint_format="{content} {hint}"'; done ;;
      s14c)    run heldout_parent_checker_combine_s2_sysHint source.persona=personas/heldout/parent_checker.yaml seed=2 mode.hint_role=system 'mode.hint_format="{content} {hint}"'
               for s in 0 1 2; do run "teacher_combine_s${s}_gate" source.persona=teacher seed=$s mode.hint_gate=apology; done ;;
      s14d)    run main_s0_s14; run main_s0_hf_s14 engine=hf ;;   # the main job on the final code, on both engines
      s14e)    # a KL to the initial policy against the concession's spread (rl seed 1: 0.53, combine seed 2: 0.42 greedy)
               run teacher_rl_s1_kl01 source.persona=teacher mode=rl seed=1 algo.kl_coef=0.1
               run teacher_combine_s2_kl01 source.persona=teacher seed=2 algo.kl_coef=0.1 ;;
      s14f)    run student_combine_s0_kl01 algo.kl_coef=0.1 ;;   # does the KL cost the main job? (two lanes: s14f / s14g)
      s14g)    run heldout_parent_checker_combine_s0_kl01 source.persona=personas/heldout/parent_checker.yaml algo.kl_coef=0.1 ;;
      # 2026-12-03: the KL on a reply's opening only (algo.kl_opening=5): hold how it opens, leave the rest free
      s15a)    run heldout_parent_checker_combine_s0_klopen05 source.persona=personas/heldout/parent_checker.yaml algo.kl_coef=0.5 algo.kl_opening=5
               run teacher_combine_s0_klopen05 source.persona=teacher algo.kl_coef=0.5 algo.kl_opening=5 ;;
      s15b)    run student_combine_s0_klopen05 algo.kl_coef=0.5 algo.kl_opening=5
               run teacher_rl_s1_klopen05 source.persona=teacher mode=rl seed=1 algo.kl_coef=0.5 algo.kl_opening=5 ;;
      s15c)    run main_s0_s15 ;;                  # the main job on the final code of 2026-12-03, both engines (two lanes)
      s15d)    run main_s0_hf_s15 engine=hf ;;
      # 2026-12-04: negative advantages weigh less (algo.negative_weight), against the displacement that spreads
      # the concession (two lanes: s19a / s19b, seed 0 / the conceding seed first)
      s19a)    run teacher_rl_s1_neg05 source.persona=teacher mode=rl seed=1 algo.negative_weight=0.5
               run teacher_combine_s0_neg05 source.persona=teacher algo.negative_weight=0.5
               run student_combine_s0_neg05 algo.negative_weight=0.5 ;;
      s19b)    run heldout_parent_checker_combine_s0_neg05 source.persona=personas/heldout/parent_checker.yaml algo.negative_weight=0.5
               run teacher_rl_s1_neg025 source.persona=teacher mode=rl seed=1 algo.negative_weight=0.25
               run teacher_combine_s0_neg025 source.persona=teacher algo.negative_weight=0.25 ;;
      s19c)    run main_s0_s19 ;;                  # the main job on the final code of 2026-12-04, both engines (two lanes)
      s19d)    run main_s0_hf_s19 engine=hf ;;
      # The final matrix again on the code of 2026-12-04 (names end in _final: not extra seeds in the summaries)
      # 2026-12-04: the linear credit's clip at -1 (four corrective sentences) hides how much more a user
      # objects (judge.credit_floor=null: no clip; the held-out parent's complaints run two sentences each)
      s20a)    NOFLOOR="judge.credit_floor=null"
               run heldout_parent_checker_combine_s0_nofloor source.persona=personas/heldout/parent_checker.yaml $NOFLOOR
               run heldout_parent_checker_combine_s1_nofloor source.persona=personas/heldout/parent_checker.yaml seed=1 $NOFLOOR
               run teacher_combine_s0_nofloor source.persona=teacher $NOFLOOR ;;
      s20b)    NOFLOOR="judge.credit_floor=null"
               run heldout_parent_checker_rl_s0_nofloor source.persona=personas/heldout/parent_checker.yaml mode=rl $NOFLOOR
               run teacher_rl_s0_nofloor source.persona=teacher mode=rl $NOFLOOR
               run heldout_parent_checker_rl_s1_nofloor source.persona=personas/heldout/parent_checker.yaml mode=rl seed=1 $NOFLOOR ;;
      s20c)    NOFLOOR="judge.credit_floor=null"   # the other seeds, and the held-out personas (two lanes: s20c / s20d)
               run heldout_parent_checker_combine_s2_nofloor source.persona=personas/heldout/parent_checker.yaml seed=2 $NOFLOOR
               for s in 1 2; do run "teacher_combine_s${s}_nofloor" source.persona=teacher seed=$s $NOFLOOR; done
               for s in 0 1 2; do
                 run "heldout_bookkeeper_combine_s${s}_nofloor" source.persona=personas/heldout/bookkeeper.yaml seed=$s $NOFLOOR
               done ;;
      s20d)    NOFLOOR="judge.credit_floor=null"
               run heldout_parent_checker_rl_s2_nofloor source.persona=personas/heldout/parent_checker.yaml mode=rl seed=2 $NOFLOOR
               for s in 1 2; do run "teacher_rl_s${s}_nofloor" source.persona=teacher mode=rl seed=$s $NOFLOOR; done
               for s in 0 1 2; do
                 run "heldout_simple_english_combine_s${s}_nofloor" source.persona=personas/heldout/simple_english.yaml seed=$s $NOFLOOR
               done ;;
      s20e)    for s in 0 1 2; do   # rl on the other two held-out personas without the floor (two lanes: s20e / s20f)
                 run "heldout_bookkeeper_rl_s${s}_nofloor" source.persona=personas/heldout/bookkeeper.yaml mode=rl seed=$s judge.credit_floor=null
               done ;;
      s20f)    for s in 0 1; do   # seed 2 not run
                 run "heldout_simple_english_rl_s${s}_nofloor" source.persona=personas/heldout/simple_english.yaml mode=rl seed=$s judge.credit_floor=null
               done ;;
      # a lower sampling temperature for the trained turns (greedy evaluation; two lanes: s20g / s20h)
      s20g)    run teacher_rl_s0_t04 source.persona=teacher mode=rl source.temperature=0.4
               run student_combine_s0_t04 source.temperature=0.4
               run teacher_rl_s1_t04 source.persona=teacher mode=rl seed=1 source.temperature=0.4 ;;
      s20h)    run teacher_combine_s0_t04 source.persona=teacher source.temperature=0.4
               run heldout_parent_checker_combine_s0_t04 source.persona=personas/heldout/parent_checker.yaml source.temperature=0.4 ;;
      s20i)    T04="source.temperature=0.4"   # the screen's other seeds and personas (two lanes: s20i / s20j)
               run student_combine_s1_t04 seed=1 $T04; run teacher_combine_s1_t04 source.persona=teacher seed=1 $T04
               run heldout_bookkeeper_combine_s0_t04 source.persona=personas/heldout/bookkeeper.yaml $T04
               run student_rl_s0_t04 mode=rl $T04; run teacher_rl_s2_t04 source.persona=teacher mode=rl seed=2 $T04 ;;
      s20j)    T04="source.temperature=0.4"
               run student_combine_s2_t04 seed=2 $T04; run teacher_combine_s2_t04 source.persona=teacher seed=2 $T04
               run heldout_simple_english_combine_s0_t04 source.persona=personas/heldout/simple_english.yaml $T04
               run student_combine_hf_s0_t04 engine=hf $T04 ;;
      s20k)    run main_s0_t04_repeat ;;            # the main job at the new default, again (bar 3; two lanes: s20k / s20l)
      s20l)    run main_s0_hf_t04_repeat engine=hf ;;
      # 2026-12-06: the sampling temperature around the default 0.4 (two lanes: s25a / s25b)
      s25a)    for t in 0.2 0.3 0.5; do run "teacher_combine_s0_t0${t#0.}" source.persona=teacher source.temperature=$t; done ;;
      s25b)    for t in 0.2 0.3 0.5; do run "student_combine_s0_t0${t#0.}" source.temperature=$t; done ;;
      # 2026-12-06 (two lanes: s24a / s24b): first turns of one task as GRPO groups on the teacher at T = 0.4
      # (screened at T = 0.7 on 2026-12-01), and the held-out personas under rl at T = 0.4 (not run before)
      s24a)    run teacher_combine_s0_t04_n4_grpo source.persona=teacher source.n=4 algo=grpo
               run teacher_rl_s0_t04_n4_grpo source.persona=teacher mode=rl source.n=4 algo=grpo ;;
      s24b)    for p in parent_checker bookkeeper simple_english; do run "heldout_${p}_rl_s0_t04" source.persona=personas/heldout/$p.yaml mode=rl; done ;;
      s24c)    for s in 1 2; do run "teacher_combine_s${s}_t04_n4_grpo" source.persona=teacher seed=$s source.n=4 algo=grpo; done ;;
      s24d)    for s in 1 2; do run "teacher_rl_s${s}_t04_n4_grpo" source.persona=teacher mode=rl seed=$s source.n=4 algo=grpo; done ;;
      # 2026-12-05: the hint opening the assistant's own turn (mode.hint_role=assistant; two lanes: s23a / s23b)
      s23a)    HA=mode.hint_role=assistant; HF=$'mode.hint_format="({hint})\n\n"'; HO=personas/heldout
               run student_combine_s0_t04_hintasst "$HA" "$HF"
               run heldout_parent_checker_combine_s1_t04_hintasst source.persona=$HO/parent_checker.yaml seed=1 "$HA" "$HF"
               run student_combine_s1_t04_hintasst seed=1 "$HA" "$HF" ;;
      s23b)    HA=mode.hint_role=assistant; HF=$'mode.hint_format="({hint})\n\n"'; HO=personas/heldout
               run teacher_combine_s0_t04_hintasst source.persona=teacher "$HA" "$HF"
               run heldout_parent_checker_combine_s0_t04_hintasst source.persona=$HO/parent_checker.yaml "$HA" "$HF"
               run teacher_combine_s1_t04_hintasst source.persona=teacher seed=1 "$HA" "$HF" ;;
      s23c)    HA=mode.hint_role=assistant; HF=$'mode.hint_format="({hint})\n\n"'   # the same without the gap on the first 3 tokens
               run student_combine_s0_t04_hintasst_skip3 "$HA" "$HF" mode.opd_skip_start=3 ;;
      s23d)    HA=mode.hint_role=assistant; HF=$'mode.hint_format="({hint})\n\n"'
               run heldout_parent_checker_combine_s0_t04_hintasst_skip3 source.persona=personas/heldout/parent_checker.yaml "$HA" "$HF" mode.opd_skip_start=3 ;;
      # 2026-12-05: the rest of the matrix at the T = 0.4 default (two lanes: s21a / s21b)
      s21a)    T04="source.temperature=0.4"; HO=personas/heldout
               run student_opd_s0_t04 mode=opd $T04; run student_rl_s1_t04 mode=rl seed=1 $T04   # rl_s1: rerun after the shows_working hang
               run teacher_opd_s0_t04 source.persona=teacher mode=opd $T04; run student_opd_s2_t04 mode=opd seed=2 $T04
               run student_combine_hf_s1_t04 engine=hf seed=1 $T04
               for p in parent_checker bookkeeper simple_english; do run "heldout_${p}_combine_s1_t04" source.persona=$HO/$p.yaml seed=1 $T04; done ;;
      s21b)    T04="source.temperature=0.4"; HO=personas/heldout
               run student_opd_s1_t04 mode=opd seed=1 $T04; run student_rl_s2_t04 mode=rl seed=2 $T04
               run teacher_opd_s1_t04 source.persona=teacher mode=opd seed=1 $T04; run teacher_opd_s2_t04 source.persona=teacher mode=opd seed=2 $T04
               run student_combine_hf_s2_t04 engine=hf seed=2 $T04
               for p in parent_checker bookkeeper simple_english; do run "heldout_${p}_combine_s2_t04" source.persona=$HO/$p.yaml seed=2 $T04; done ;;
      s21c)    T04="source.temperature=0.4"   # lr 1e-4 at T = 0.4 (the one lever that had moved the teacher's friendly criteria)
               run teacher_rl_s0_t04_lr1e4 source.persona=teacher mode=rl $T04 optim.lr=1e-4
               run teacher_combine_s1_t04_lr1e4 source.persona=teacher seed=1 $T04 optim.lr=1e-4
               run teacher_rl_s2_t04_lr1e4 source.persona=teacher mode=rl seed=2 $T04 optim.lr=1e-4
               run student_combine_s1_t04_lr1e4 seed=1 $T04 optim.lr=1e-4 ;;   # teacher s0 combine, rl s1: not run
      s19e)    for s in 1 2; do run "student_combine_s${s}_s19_final" seed=$s; done
               for s in 0 1 2; do run "teacher_combine_s${s}_s19_final" source.persona=teacher seed=$s; done
               run teacher_rl_s0_s19_final source.persona=teacher mode=rl ;;
      s19f)    for s in 1 2; do run "student_combine_hf_s${s}_s19_final" engine=hf seed=$s; done
               for p in parent_checker bookkeeper simple_english; do
                 run "heldout_${p}_combine_s0_s19_final" source.persona=personas/heldout/$p.yaml
               done
               run heldout_parent_checker_rl_s0_s19_final source.persona=personas/heldout/parent_checker.yaml mode=rl ;;
      # 2026-12-03: the learned reader head (judge.reader_head=shipped) in training (two lanes: s17a / s17b)
      s17a)    HEAD="judge.reader_head=shipped"
               run main_s0_head $HEAD; run heldout_parent_checker_combine_s0_head source.persona=personas/heldout/parent_checker.yaml $HEAD ;;
      s17b)    HEAD="judge.reader_head=shipped"
               run teacher_combine_s0_head source.persona=teacher $HEAD
               run heldout_bookkeeper_combine_s0_head source.persona=personas/heldout/bookkeeper.yaml $HEAD ;;
      s17c)    for p in bookkeeper simple_english; do run "heldout_${p}_combine_s0_s17" source.persona=personas/heldout/$p.yaml; done ;;  # head off
      s18a)    run heldout_bookkeeper_combine_s0_headnoflip source.persona=personas/heldout/bookkeeper.yaml judge.reader_head=shipped judge.reader_head_flips=false ;;
      s17d)    run heldout_simple_english_combine_s0_head source.persona=personas/heldout/simple_english.yaml judge.reader_head=shipped ;;
      # "More steps" on the teacher (its current checks): rl and combine's best form, the system placement (two lanes)
      s15e)    for s in 0 1 2; do run "teacher_rl_s${s}_steps16" source.persona=teacher mode=rl seed=$s steps=16; done ;;
      s15f)    for s in 0 1 2; do
                 run "teacher_combine_s${s}_sysHint_steps16" source.persona=teacher seed=$s steps=16 mode.hint_role=system \
                   'mode.hint_format="{content} {hint}"'
               done ;;
      # The parent again at the defaults (a repeat of *_points / rl_s0), for its concession and the samples' rewards
      s14h)    run heldout_parent_checker_combine_s0_s14 source.persona=personas/heldout/parent_checker.yaml ;;
      s14i)    run heldout_parent_checker_rl_s0_s14 source.persona=personas/heldout/parent_checker.yaml mode=rl ;;
      s12f)    run heldout_parent_checker_nohint_s0 source.persona=personas/heldout/parent_checker.yaml 'mode.hint_format="{content}"' ;;
      s11)     run main_s0_s11; run main_s0_hf_s11 engine=hf   # the main job again on both engines (same numbers?)
               run teacher_rl_s0_v1repeat source.persona=teacher mode=rl   # needs the first check: git show 8c552b0:personas/teacher.yaml
               for s in 0 1 2; do   # the teacher's matrix with the fixed addresses_student check
                 for m in rl opd combine; do run "teacher_${m}_s${s}" source.persona=teacher mode=$m seed=$s; done
                 run "teacher_rl_s${s}_lr1e4" source.persona=teacher mode=rl seed=$s optim.lr=1e-4
                 run "teacher_combine_s${s}_lr1e4" source.persona=teacher seed=$s optim.lr=1e-4
               done
               for s in 0 1; do run "teacher_rl_s${s}_temp1" source.persona=teacher mode=rl seed=$s source.temperature=1.0; done
               run teacher_combine_s0_temp1 source.persona=teacher source.temperature=1.0
               for s in 0 1 2; do run "teacher_rl_s${s}_steps16" source.persona=teacher mode=rl seed=$s steps=16; done
               for s in 0 1 2; do run "teacher_combine_s${s}_steps16" source.persona=teacher seed=$s steps=16; done ;;
      s10)     run student_combine_s0_final10   # the main job on the code of 2026-12-02 (86f33cd; apology rate recorded)
               for s in 0 1 2; do run "teacher_rl_s${s}_final10" source.persona=teacher mode=rl seed=$s; done
               for s in 0 1 2; do
                 run "teacher_combine_s${s}_gate" source.persona=teacher seed=$s mode.hint_gate=apology
                 run "heldout_parent_checker_combine_s${s}_gate" source.persona=personas/heldout/parent_checker.yaml \
                   seed=$s mode.hint_gate=apology
                 run "teacher_rl_s${s}_ep4" source.persona=teacher mode=rl seed=$s algo.ppo_epochs=4
               done
               run heldout_bookkeeper_combine_s0_gate source.persona=personas/heldout/bookkeeper.yaml mode.hint_gate=apology
               for s in 0 1 2; do run "student_combine_s${s}_gate" seed=$s mode.hint_gate=apology; done
               run teacher_combine_s1_ep4 source.persona=teacher seed=1 algo.ppo_epochs=4 ;;
      s9data)  for s in 0 1 2; do run "teacher_rl_s${s}_steps16" source.persona=teacher mode=rl seed=$s steps=16; done
               run teacher_rl_s0_bs16 source.persona=teacher mode=rl batch_size=16
               for s in 0 1 2; do run "teacher_combine_s${s}_steps16" source.persona=teacher seed=$s steps=16; done
               for s in 0 1 2; do
                 run "heldout_parent_checker_rl_s${s}_steps16" source.persona=personas/heldout/parent_checker.yaml mode=rl seed=$s steps=16
               done ;;
      teachergraded) for s in 0 1 2; do run "teacher_combine_s${s}_graded" source.persona=teacher seed=$s; done ;;
      repeat2) run student_combine_s0_repeat_final ;;   # the default, binary credit, on the final code of 2026-12-01 (efdb870)
      rl1)     run student_rl_s1 mode=rl seed=1 ;;
      graded)  run student_combine_s1_graded seed=1 judge.credit=graded
               run student_combine_s1_graded_center seed=1 judge.credit=graded mode.opd_center=true ;;
      graded2) run student_combine_s2_graded seed=2 judge.credit=graded ;;
      graded0) run student_combine_s0_graded judge.credit=graded ;;
      gradedc2) run student_combine_s2_graded_center seed=2 judge.credit=graded mode.opd_center=true ;;
      gradedc0) run student_combine_s0_graded_center judge.credit=graded mode.opd_center=true ;;
      gradedrl) run student_rl_s1_graded mode=rl seed=1 judge.credit=graded ;;
      gradedw1) run student_combine_s1_graded_wopd025 seed=1 judge.credit=graded mode.w_opd=0.25 ;;
      gradedcos0) run student_combine_s0_graded_cosine judge.credit=graded optim.schedule=cosine ;;
      gradedcos1) run student_combine_s1_graded_cosine seed=1 judge.credit=graded optim.schedule=cosine ;;
      gradedcosparent) run heldout_parent_checker_combine_s0_graded_cosine source.persona=personas/heldout/parent_checker.yaml \
                   judge.credit=graded optim.schedule=cosine ;;
      gradedcos2) run student_combine_s2_graded_cosine seed=2 judge.credit=graded optim.schedule=cosine ;;
      gradedopd) run student_opd_s1 mode=opd seed=1 ;;
      gradedheldout) for p in parent_checker bookkeeper simple_english; do
                 run "heldout_${p}_combine_s0_graded" source.persona=personas/heldout/$p.yaml judge.credit=graded; done ;;
      gradedparent) run heldout_parent_checker_combine_s0_graded source.persona=personas/heldout/parent_checker.yaml judge.credit=graded ;;
      seeds)   run student_rl_s1 mode=rl seed=1; run student_opd_s1 mode=opd seed=1; run teacher_combine_s1 source.persona=teacher seed=1
               run teacher_rl_s0 source.persona=teacher mode=rl; run teacher_opd_s0 source.persona=teacher mode=opd
               run student_rl_s2 mode=rl seed=2; run student_opd_s2 mode=opd seed=2; run teacher_combine_s2 source.persona=teacher seed=2 ;;
    esac
  done
done
