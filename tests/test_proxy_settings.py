"""The proxy's settings have one source of truth (`ProxySettings`), and a misspelt key is an error that names it:
on the command line (Hydra refuses it), and where a key reaches the source unchecked (`+source.<key>`, an experiment
file, the simulated users' `source.proxy` block)."""

from __future__ import annotations

from dataclasses import fields

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from claw.sources.build import build_source
from claw.sources.proxy.settings import ProxySettings
from claw.sources.proxy.source import ProxySource
from tests.conftest import CONF, make_cfg

PROXY = ["source=proxy", "judge=rule", "algo=reinforce", "mode=rl", "fsync=false"]
NOT_SETTINGS = {"_target_", "name", "conversational", "n"}  # the source's own keys (build_source, validate read them)
LIVE = {"mode", "topk"}  # passed by build_source from the run's mode


def test_conf_lists_every_setting_with_its_default(monkeypatch):
    monkeypatch.delenv("CLAW_API_KEY", raising=False)
    conf = OmegaConf.to_container(OmegaConf.load(CONF / "source" / "proxy.yaml"), resolve=True)
    settings = {k: v for k, v in conf.items() if k not in NOT_SETTINGS}
    defaults = {f.name: f.default for f in fields(ProxySettings) if f.name not in LIVE}
    assert set(settings) == set(defaults)
    for key, value in settings.items():
        expected = list(defaults[key]) if isinstance(value, list) else defaults[key]
        assert value == expected, f"conf/source/proxy.yaml {key}: {value!r}, ProxySettings: {defaults[key]!r}"


def test_a_misspelt_key_names_itself_and_the_key_it_meant(tmp_path):
    with pytest.raises(TypeError, match=r"unknown proxy setting 'idle_timeot_s' \(did you mean 'idle_timeout_s'\?\)"):
        ProxySource(None, None, tmp_path, idle_timeot_s=5)
    with pytest.raises(TypeError, match="'zzz'"):
        ProxySettings.from_keys({"port": 0, "zzz": 1})
    assert ProxySettings.from_keys({"idle_timeout_s": 5}).idle_timeout_s == 5


def test_a_misspelt_key_on_the_command_line_is_refused_by_hydra():
    with pytest.raises(ConfigCompositionException, match="source.idle_timeot_s"):
        make_cfg([*PROXY, "source.idle_timeot_s=5"])


@pytest.mark.parametrize(
    "overrides",
    [[*PROXY, "+source.idle_timeot_s=5"], ["source=simulated_user", *PROXY[1:], "+source.proxy.idle_timeot_s=5"]],
    ids=["proxy", "simulated_user"],
)
def test_a_misspelt_key_that_reaches_the_source_fails_the_build(tiny_policy, tmp_path, overrides):
    cfg = make_cfg(overrides, tmp_path)
    with pytest.raises(Exception, match=r"idle_timeot_s' \(did you mean 'idle_timeout_s'\?\)"):
        build_source(cfg, tiny_policy, engine=None)
