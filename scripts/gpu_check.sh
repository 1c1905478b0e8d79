#!/usr/bin/env bash
# One-GPU check of the colocate layout with the hf engine (see scripts/gpu_check.py), < 8 min on an H200.
#   bash scripts/gpu_check.sh [--shape 0.6b|1.7b] [extra gpu_check.py args]
#   bash scripts/gpu_check.sh --layout fsdp [--devices N]   # the trainer under layout=fsdp (claw/fsdp.py)
# Needs torch with CUDA, lightning, transformers and claw's pure-Python deps (hydra-core, omegaconf);
# no network, no model download, no vLLM (its GPU path cannot be checked there).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python}
$PY - <<'PY'
import importlib, sys
missing = [m for m in ("torch", "lightning", "transformers", "hydra", "omegaconf") if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"gpu_check: missing {missing}; pip install them (hydra-core, omegaconf are small pure-Python wheels)")
import torch
print(f"gpu_check: torch {torch.__version__}, cuda {torch.version.cuda}, device {torch.cuda.get_device_name() if torch.cuda.is_available() else 'none'}")
PY
export TOKENIZERS_PARALLELISM=false
timeout 480 $PY scripts/gpu_check.py "$@"
