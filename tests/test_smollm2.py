"""The real embedded model (slow: converts the GGUF on first use, ~20-45 s)."""

import pytest
import torch

pytestmark = pytest.mark.slow


def test_smollm2_loads_and_answers():
    from claw.engine import HFEngine, SamplingParams
    from claw.models import load_smollm2

    policy = load_smollm2()
    assert sum(p.numel() for p in policy.model.parameters()) > 100e6
    ids = policy.tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is 3 + 4?"}], add_generation_prompt=True, tokenize=True
    )
    ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    out = HFEngine(policy).generate([ids], SamplingParams(temperature=0.0, max_new_tokens=24))[0]
    assert "7" in policy.tokenizer.decode(out.response_ids)


def test_the_converted_checkpoint_is_not_marked_quantized():
    """The weights are dequantised fp32: no GGUF quantization_config may remain (HF Trainer / TRL refuse
    to fine-tune a model transformers believes is quantized)."""
    import json

    from claw.models import smollm2_dir

    config = json.loads((smollm2_dir() / "config.json").read_text())
    assert "quantization_config" not in config


def test_smollm2_two_training_steps(tmp_path):
    from tests.conftest import make_cfg
    from train import run

    cfg = make_cfg(
        [
            "steps=2",
            "logger=none",
            "batch_size=8",
            "source.n=4",
            "source.prompts_per_generate=2",
            "source.max_new_tokens=16",
            "source.eval_size=8",
            "source.eval_max_new_tokens=16",
        ],
        tmp_path,
    )
    summary = run(cfg)
    assert summary["steps"] == 2
    assert torch.load(tmp_path / "checkpoints" / "last.ckpt", weights_only=False)["policy_version"] == 2
