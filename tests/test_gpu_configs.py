"""The GPU configurations compose and pass claw's validation on a machine without a GPU (nothing runs here):
`experiment=openclaw_qwen3_4b` (FSDP on 4 GPUs, a tensor-parallel vLLM rollout server on 2, a vLLM judge on 2) and
`experiment=lora_single_gpu` (LoRA, trainer and in-process vLLM sharing one GPU)."""

import pytest
from omegaconf import OmegaConf

from claw.config import ConfigError, check_hardware, layout_problems, trainer_processes, validate
from tests.conftest import make_cfg


def test_the_openclaw_qwen3_4b_experiment_composes_and_validates(tmp_path):
    cfg = make_cfg(["experiment=openclaw_qwen3_4b"], tmp_path)
    validate(cfg)
    layout = cfg.layout
    assert (layout.accelerator, layout.strategy, layout.precision) == ("gpu", "fsdp", "bf16-mixed")
    assert trainer_processes(layout) == 4 and cfg.trainer.devices == 4 and cfg.trainer.num_nodes == 1
    assert cfg.engine.kind == "vllm_server" and cfg.engine.options.devices == "4,5"
    assert list(cfg.engine.options.extra_args) == ["--tensor-parallel-size", "2"]
    assert cfg.judge.kind == "openai" and cfg.judge.base_url.endswith("/v1") and cfg.source.name == "proxy"
    strategy = OmegaConf.to_container(cfg.trainer.strategy, resolve=True)
    assert strategy == {"_target_": "claw.distributed.make_strategy", "name": "fsdp", "timeout_min": 120}
    with pytest.raises(ConfigError, match="no CUDA device"):  # run time only: this machine has no GPU
        check_hardware(layout)


def test_the_lora_single_gpu_experiment_composes_and_validates(tmp_path):
    cfg = make_cfg(["experiment=lora_single_gpu"], tmp_path)
    validate(cfg)
    assert cfg.lora.enabled and cfg.layout.accelerator == "gpu" and trainer_processes(cfg.layout) == 1
    assert cfg.engine.kind == "vllm" and cfg.layout.sleep_level == 1


def test_fsdp_layouts_validate_with_the_engines_ddp_allows():
    for layout in ("layout=fsdp", "layout=fsdp_gpu"):
        validate(make_cfg([layout]))
        validate(make_cfg([layout, "engine=hf"]))
        with pytest.raises(ConfigError, match="clashing with the trainer's"):  # in-process vLLM: its own group
            validate(make_cfg([layout, "engine=vllm"]))
    validate(make_cfg(["layout=split_cpu", "engine=vllm_server", "layout.devices=2", "layout.strategy=fsdp"]))
    two_nodes = make_cfg(["layout=fsdp", "layout.devices=1", "layout.num_nodes=2"])
    assert trainer_processes(two_nodes.layout) == 2 and two_nodes.trainer.num_nodes == 2
    assert not layout_problems(two_nodes.layout, two_nodes.engine)
    with pytest.raises(ConfigError, match="only ddp and fsdp"):
        validate(make_cfg(["layout.devices=2", "layout.strategy=deepspeed"]))
