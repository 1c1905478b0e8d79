"""No secret is written to disk or sent to W&B: with CLAW_API_KEY and OPENAI_API_KEY set, neither value appears in
any file of the run directory (config.yaml, the offline W&B run), and `resume=` still finds the keys."""

from __future__ import annotations

import subprocess
import sys

from claw.config import build
from claw.redaction import REDACTED, save_config
from tests.conftest import ROOT, TINY, make_cfg

CLAW_KEY, OPENAI_KEY = "claw-key-0f9e8d7c6b", "sk-openai-1a2b3c4d5e"


def leaks(run_dir) -> list[str]:
    keys = (CLAW_KEY.encode(), OPENAI_KEY.encode())
    return [str(p) for p in run_dir.rglob("*") if p.is_file() and any(k in p.read_bytes() for k in keys)]


def test_config_and_wandb_hold_api_keys_redacted(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAW_API_KEY", CLAW_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("WANDB_MODE", "offline")
    overrides = ["source=proxy", "judge=openai", "logger=wandb", "model=tiny", "algo=reinforce", "mode=combine"]
    cfg = make_cfg(overrides, tmp_path)
    assert cfg.source.api_key == CLAW_KEY and cfg.judge.api_key == OPENAI_KEY  # the run itself has them
    save_config(cfg, tmp_path / "config.yaml")
    tracking = build(cfg.logger, run=cfg)  # logger=wandb
    tracking.logger.log_metrics({"train/loss": 1.0}, step=0)
    run_config = dict(tracking.logger.experiment.config)
    tracking.finish()
    assert run_config["source"]["api_key"] == REDACTED and run_config["judge"]["api_key"] == REDACTED
    assert list((tmp_path / "wandb").rglob("*")), "the offline W&B run wrote nothing to check"
    assert not leaks(tmp_path), leaks(tmp_path)
    # on disk the keys stay what they were: the environment, read again on resume
    text = (tmp_path / "config.yaml").read_text()
    assert "${oc.env:CLAW_API_KEY,null}" in text and "${oc.env:OPENAI_API_KEY,EMPTY}" in text


def test_a_literal_key_is_redacted_and_resume_asks_for_it(tmp_path, monkeypatch):
    monkeypatch.delenv("CLAW_API_KEY", raising=False)
    cfg = make_cfg([*TINY, "+source.api_key=" + CLAW_KEY], tmp_path)
    save_config(cfg, tmp_path / "config.yaml")
    assert not leaks(tmp_path) and REDACTED in (tmp_path / "config.yaml").read_text()
    args = [sys.executable, "train.py", f"resume={tmp_path}"]
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "source.api_key" in out.stderr and "pass it again" in out.stderr, out.stderr[-2000:]
