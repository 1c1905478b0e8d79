"""Every config option composes; bad options and impossible combinations fail clearly."""

import subprocess
import sys

import pytest
from hydra.errors import ConfigCompositionException

from claw.config import ConfigError, validate
from claw.models import ModelLoadError, load_hf
from tests.conftest import CONF, ROOT, TINY, make_cfg

GROUPS = sorted(p.name for p in CONF.iterdir() if p.is_dir() and p.name != "sweep")  # sweeps: tests/test_sweeps.py


def options(group):
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def test_all_design_groups_exist():
    assert set(GROUPS) >= {"mode", "algo", "source", "layout", "engine", "model", "judge", "logger", "experiment"}


@pytest.mark.parametrize("group,option", [(g, o) for g in GROUPS for o in options(g)])
def test_every_option_composes(group, option):
    overrides = [f"{group}={option}"]
    if group == "model" and option == "hf":
        overrides.append("model.path=/nonexistent")
    if group == "source" and option in ("proxy", "simulated_user"):  # conversation sources: a judge, and groups of one
        overrides += ["judge=rule", "algo=reinforce"]
    if group == "layout" and option.startswith("split"):
        overrides.append("engine=vllm_server")  # the split layout's rollout engine (a config error without it)
    if (group, option) == ("engine", "vllm_server"):
        overrides.append("layout=split_cpu")  # and the other way round
    if (group, option) == ("guard", "canary"):  # live sessions, on the engine that holds two weight sets
        overrides += ["source=proxy", "judge=rule", "algo=reinforce", "engine=hf"]
    cfg = make_cfg(overrides)
    assert cfg is not None
    if group == "judge" and option != "verifier":
        # LLM/rule judges read conversations; source=dataset scores with its verifier.
        with pytest.raises(ConfigError, match="judge=verifier"):
            validate(cfg)
    elif group != "model":
        validate(cfg)


def test_typo_in_option_is_a_hydra_error():
    with pytest.raises(ConfigCompositionException, match="algo"):
        make_cfg(["algo=grpoo"])


def test_impossible_combinations_name_the_fix():
    with pytest.raises(ConfigError, match="source.n>=2"):
        validate(make_cfg(["source.n=1"]))
    with pytest.raises(ConfigError, match="loss_agg"):
        validate(make_cfg(["algo.loss_agg=sum"]))
    with pytest.raises(ConfigError, match="kl_coef"):
        validate(make_cfg(["algo.kl_opening=5"]))
    validate(make_cfg(["algo.kl_opening=5", "algo.kl_coef=0.5"]))


def test_missing_model_path_is_clear(tmp_path):
    with pytest.raises(ModelLoadError, match="not a directory"):
        load_hf(tmp_path / "missing")
    (tmp_path / "bad").mkdir()
    with pytest.raises(ModelLoadError, match="config.json"):
        load_hf(tmp_path / "bad")
    (tmp_path / "bad" / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match="Could not load"):
        load_hf(tmp_path / "bad")


def test_loading_a_checkpoint_prints_no_per_tensor_bar_and_leaves_the_setting_as_it_was(tmp_path, capfd, tiny_policy):
    from transformers.utils import logging as hf_logging

    tiny_policy.model.save_pretrained(tmp_path / "ckpt")
    tiny_policy.tokenizer.save_pretrained(tmp_path / "ckpt")
    hf_logging.enable_progress_bar()
    capfd.readouterr()
    loaded = load_hf(tmp_path / "ckpt")
    assert "Loading weights" not in capfd.readouterr().err  # transformers draws it on stderr when enabled
    assert hf_logging.is_progress_bar_enabled()  # the caller's setting is restored
    assert loaded.model.config.hidden_size == tiny_policy.model.config.hidden_size


def test_help_lists_groups():
    out = subprocess.run([sys.executable, "train.py", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    for group in ("mode", "algo", "source", "model", "engine", "layout", "judge", "logger"):
        assert f"{group}:" in out.stdout, group


def test_layouts_compose_and_reject_what_they_cannot_do():
    import pytest

    from claw.config import ConfigError, validate

    colocate = make_cfg(["layout=colocate", "engine=vllm"])
    assert colocate.engine.options.gpu_memory_utilization == 0.3 and colocate.engine.options.sleep_level == 1
    split = make_cfg(["layout=split", "engine=vllm_server"])
    validate(split)
    assert split.engine.options.devices == "1"
    with pytest.raises(ConfigError, match="engine=vllm_server"):
        validate(make_cfg(["layout=split"]))
    validate(make_cfg(["layout=cpu_ddp"]))
    validate(make_cfg(["layout=colocate", "layout.devices=4", "layout.strategy=ddp"]))
    with pytest.raises(ConfigError, match="layout.strategy=ddp"):
        validate(make_cfg(["layout.devices=2"]))  # strategy auto: say which
    with pytest.raises(ConfigError, match="pickle"):
        validate(make_cfg(["layout.devices=2", "layout.strategy=ddp_spawn"]))
    with pytest.raises(ConfigError, match="engine=vllm_server"):
        validate(make_cfg(["layout=cpu_ddp", "engine=vllm"]))  # in-process vLLM's own process group
    validate(make_cfg(["layout=split_cpu", "engine=vllm_server", "layout.devices=2", "layout.strategy=ddp"]))
    validate(make_cfg(["layout.devices=2", "layout.strategy=fsdp"]))  # layout=fsdp (tests/test_fsdp.py)
    with pytest.raises(ConfigError, match="only ddp and fsdp"):
        validate(make_cfg(["layout.devices=2", "layout.strategy=deepspeed"]))
    with pytest.raises(ConfigError, match="layout=split_cpu"):
        validate(make_cfg(["engine=vllm_server"]))  # layout=cpu has no rollout devices
    split_cpu = make_cfg(["layout=split_cpu", "engine=vllm_server"], "/tmp/run")
    validate(split_cpu)
    assert split_cpu.layout.accelerator == "cpu" and split_cpu.engine.options.devices is None
    assert split_cpu.engine.options.log_file == "/tmp/run/vllm_server.log"


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_a_gpu_layout_without_a_gpu_fails_before_anything_starts(tmp_path):
    from train import run

    with pytest.raises(ConfigError, match="no CUDA device.*layout=split_cpu"):
        run(make_cfg(["model=tiny", "layout=split", "engine=vllm_server"], tmp_path))
    assert not (tmp_path / "vllm_server.log").exists()  # no model loaded, no server started


def test_a_run_saved_before_the_sources_moved_still_resumes(tmp_path) -> None:
    """Sources moved to claw/sources/: a saved config naming the old module resumes with the new one."""
    from hydra.utils import get_class, get_method
    from omegaconf import OmegaConf

    from claw.config import MOVED_TARGETS, resolve_resume

    model = {"_target_": "claw.policy.load_smollm2"}
    for old, new in MOVED_TARGETS.items():
        saved = OmegaConf.create({"source": {"_target_": old}, "model": model, "steps": 2})
        OmegaConf.save(saved, tmp_path / "config.yaml")
        cfg = resolve_resume(OmegaConf.create({"resume": str(tmp_path)}), ["resume=" + str(tmp_path), "steps=4"])
        assert cfg.source._target_ == new and cfg.steps == 4
        assert get_class(new).__name__ == new.rsplit(".", 1)[1]  # the new path imports
        assert cfg.model._target_ == "claw.models.load_smollm2" and callable(get_method(cfg.model._target_))


def test_a_run_saved_before_the_composition_was_declarative_still_resumes(tmp_path) -> None:
    """Logger and engine gained `_target_`s, conf/train.yaml a `trainer` and a `callbacks` block: a run
    saved before resumes as today's config would have built it, and keys it predates keep what that run did."""
    from omegaconf import OmegaConf

    from claw.config import build, resolve_resume

    today = make_cfg(
        [*TINY, "logger=csv", "checkpoint_interval_s=0", "release_memory=false", "engine.score_batch_size=null"],
        tmp_path,
    )
    old = OmegaConf.to_container(today)
    for key in ("trainer", "callbacks", "checkpoint_async", "checkpoint_interval_s", "verbose", "release_memory"):
        del old[key]
    del old["layout"]["collective_timeout_min"], old["engine"]["_target_"], old["engine"]["score_batch_size"]
    old["logger"] = {"kind": "csv", "sample_table_every": 1, "sample_table_rows": 8}
    OmegaConf.save(OmegaConf.create(old), tmp_path / "config.yaml")
    cfg = resolve_resume(OmegaConf.create({"resume": str(tmp_path)}), ["resume=" + str(tmp_path)])
    assert OmegaConf.to_container(cfg, resolve=True) == {
        **OmegaConf.to_container(today, resolve=True),
        "resume": str(tmp_path),
    }
    trainer = build(cfg.trainer, logger=False, callbacks=[])
    assert trainer.max_epochs == 1 and trainer.strategy.checkpoint_io.background
    assert type(build(cfg.logger, run=cfg).logger).__name__ == "CSVLogger"
