"""Each mode × algo trains the tiny model for two steps through train.py: every trainable parameter
gets a finite, non-zero gradient and changes (LoRA: only adapter parameters, base weights frozen)."""

from pathlib import Path

import lightning as L
import pytest
import torch

from tests.conftest import TINY, make_cfg

MODES = ["rl", "opd", "combine"]
ALGOS = ["grpo", "dr_grpo", "rloo", "reinforce", "ppo"]


class GradientAudit(L.Callback):
    """Records, per trainable parameter, whether it ever had a non-zero gradient and whether all were finite."""

    def on_fit_start(self, trainer, module):
        self.initial = {n: p.detach().clone() for n, p in module.named_parameters()}
        self.trainable = {n for n, p in module.named_parameters() if p.requires_grad}
        self.nonzero = dict.fromkeys(self.trainable, False)
        self.finite = dict.fromkeys(self.trainable, True)

    def on_before_optimizer_step(self, trainer, module, optimizer):
        for n, p in module.named_parameters():
            if n in self.trainable and p.grad is not None:
                self.nonzero[n] |= bool(p.grad.abs().sum() > 0)
                self.finite[n] &= bool(torch.isfinite(p.grad).all())

    def on_fit_end(self, trainer, module):
        self.final = {n: p.detach().clone() for n, p in module.named_parameters()}


def parity_reward(completions: list[str], **_) -> list[float]:
    """A reward that varies within every group: the parity of the response's length."""
    return [float(len(text) % 2) for text in completions]


def train_two_steps(tmp_path, overrides, monkeypatch):
    from train import run

    # A random tiny model never answers correctly, so every group would have equal rewards and
    # zero GRPO advantage. Isolate the trainer from the verifier: reward = parity of the text length
    # (the dataset source's reward is data: `source.reward._target_` names any importable function).
    reward = ["source.reward._target_=tests.test_modes.parity_reward"]
    audit = GradientAudit()
    cfg = make_cfg([*TINY, "optim.weight_decay=0.0", "optim.lr=1e-3", *reward, *overrides], tmp_path)
    run(cfg, extra_callbacks=[audit])
    return audit


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("mode", MODES)
def test_mode_algo_trains_every_parameter(tmp_path, mode, algo, monkeypatch):
    audit = train_two_steps(tmp_path, [f"mode={mode}", f"algo={algo}"], monkeypatch)
    assert audit.trainable
    assert all(audit.finite.values()), [n for n, ok in audit.finite.items() if not ok]
    assert all(audit.nonzero.values()), [n for n, ok in audit.nonzero.items() if not ok]
    unchanged = [n for n in audit.trainable if torch.equal(audit.initial[n], audit.final[n])]
    assert not unchanged, unchanged
    if algo == "ppo":
        assert any(n.startswith("value_head") for n in audit.trainable)


@pytest.mark.parametrize("mode", ["rl", "combine"])
def test_lora_trains_only_adapters(tmp_path, mode, monkeypatch):
    audit = train_two_steps(tmp_path, [f"mode={mode}", "lora.enabled=true"], monkeypatch)
    assert audit.trainable and all("lora_" in n for n in audit.trainable)
    assert all(audit.nonzero.values()), [n for n, ok in audit.nonzero.items() if not ok]
    for n, before in audit.initial.items():
        changed = not torch.equal(before, audit.final[n])
        assert changed == (n in audit.trainable), n


def test_kl_reference_loaded_only_when_used(tmp_path):
    from claw.config import objective_from_cfg
    from claw.models import load_tiny
    from claw.module import ClawModule
    from claw.objective import Objective

    policy = load_tiny()
    off = ClawModule(policy.model, Objective(objective_from_cfg(make_cfg(TINY))))
    on = ClawModule(policy.model, Objective(objective_from_cfg(make_cfg([*TINY, "algo.kl_coef=0.1"]))))
    assert off.ref_model is None and on.ref_model is not None
    assert not any(p.requires_grad for p in on.ref_model.parameters())


def test_mode_opd_algo_ppo_reads_like_a_sentence():
    from claw.config import objective_from_cfg

    obj = objective_from_cfg(make_cfg(["mode=opd", "algo=ppo"]))
    assert (
        obj.advantage == "gae"
        and obj.critic
        and obj.advantage_kwargs["w_opd"] == 1.0
        and obj.advantage_kwargs["w_rl"] == 0.0
    )
    obj = objective_from_cfg(make_cfg(["mode=combine", "algo=rloo", "mode.w_opd=0.5"]))
    assert obj.advantage == "combine" and obj.advantage_kwargs == {
        "w_rl": 1.0,
        "w_opd": 0.5,
        "rl_estimator": "rloo",
        "rl_kwargs": {},
        "opd_center": False,
        "opd_skip_end": False,
        "opd_skip_start": 0,
        "role": "term",
        "credit_scale": 1.0,
        "credit_cap": 4.0,
    }
    obj = objective_from_cfg(make_cfg(["mode=combine", "mode.opd_role=credit", "mode.credit_scale=2"]))
    assert (obj.advantage_kwargs["role"], obj.advantage_kwargs["credit_scale"]) == ("credit", 2.0)
    for bad, match in [
        (["mode=opd", "mode.opd_role=credit"], "needs mode=combine"),
        (["mode=combine", "mode.opd_role=credit", "mode.opd_skip_end=true"], "has none"),
        (["mode=combine", "mode.opd_role=credit", "mode.opd_skip_start=3"], "has none"),
        (["mode=combine", "mode.opd_skip_start=-1"], "must be ≥ 0"),
        (["mode=combine", "mode.opd_skip_start=2", "algo=ppo"], "critic-free"),
        (["mode=combine", "mode.opd_role=blend"], "unknown"),
        (["mode=combine", "mode.opd_role=credit", "algo=ppo"], "critic-free"),
    ]:
        with pytest.raises(ValueError, match=match):
            objective_from_cfg(make_cfg(bad))
    obj = objective_from_cfg(make_cfg(["mode=opd", "mode.opd_skip_end=true"]))
    assert obj.advantage == "opd" and obj.advantage_kwargs == {
        "w_opd": 1.0, "center": False, "skip_end": True, "skip_start": 0,
    }  # fmt: skip
    obj = objective_from_cfg(make_cfg(["mode=combine", "mode.opd_skip_start=5"]))
    assert obj.advantage_kwargs["opd_skip_start"] == 5
    with pytest.raises(ValueError, match="mode.opd_role=credit apply to critic-free algos"):
        objective_from_cfg(make_cfg(["mode=opd", "algo=ppo", "mode.opd_skip_end=true"]))
    obj = objective_from_cfg(make_cfg(["mode=rl", "algo=dr_grpo"]))
    assert obj.advantage == "dr_grpo" and obj.loss_agg == "seq-mean-token-sum-norm"


def test_impossible_combinations_fail_at_start_up():
    from claw.config import ConfigError, validate

    with pytest.raises(ConfigError, match="algo=ppo"):
        validate(make_cfg(["algo.advantage=gae"]))
    with pytest.raises(ConfigError, match="algo=reinforce"):
        validate(make_cfg(["source.n=1"]))
    validate(make_cfg(["source.n=1", "algo=reinforce"]))
    with pytest.raises(ConfigError, match="dual_clip"):
        validate(make_cfg(["algo.dual_clip=0.5"]))
    with pytest.raises(ConfigError, match="topk_coef"):
        validate(make_cfg(["mode=opd", "mode.topk=5"]))


def test_mode_objects_say_which_signals_they_train_from() -> None:
    """`claw.modes.Mode`, built once from conf/mode/*.yaml: the judges and the advantage follow from it."""
    from omegaconf import OmegaConf

    from claw.modes import SIGNALS, Mode

    root = Path(__file__).resolve().parents[1] / "conf" / "mode"
    built = {}
    for name in SIGNALS:
        cfg = OmegaConf.load(root / f"{name}.yaml")
        cfg = OmegaConf.merge(
            *(OmegaConf.load(root / f"{d}.yaml") for d in cfg.get("defaults", []) if d != "_self_"), cfg
        )
        built[name] = Mode.from_cfg(cfg)
    assert {n: (m.uses_reward, m.uses_hint) for n, m in built.items()} == {
        "rl": (True, False), "opd": (False, True), "combine": (True, True),
    }  # fmt: skip
    assert built["rl"].advantage("baseline", {}) == ("baseline", {})
    assert built["opd"].advantage("baseline", {}) == (
        "opd", {"w_opd": 1.0, "center": False, "skip_end": False, "skip_start": 0},
    )  # fmt: skip
    name, kwargs = built["combine"].advantage("baseline", {"k": 1})
    assert (name, kwargs["rl_estimator"], kwargs["rl_kwargs"], kwargs["w_rl"], kwargs["w_opd"]) == (
        "combine",
        "baseline",
        {"k": 1},
        1.0,
        0.1,  # conf/mode/combine.yaml: the reward leads, the teacher adjusts tokens
    )
    assert built["combine"].advantage("baseline", {}, critic={"gamma": 1.0})[0] == "gae"
    with pytest.raises(ValueError, match="mode=distil is unknown; use rl, opd, combine"):
        Mode("distil")
    with pytest.raises(ValueError, match="needs a teacher"):
        Mode("opd", teacher=None)
    with pytest.raises(ValueError, match="mode.hint_role='tool' is unknown"):
        Mode("opd", teacher="frozen", hint_role="tool")
    with pytest.raises(ValueError, match="hint_role=assistant opens the assistant's turn.*without \\{content\\}"):
        Mode("opd", teacher="frozen", hint_role="assistant")  # the default format puts the hint beside {content}
    assert Mode("opd", teacher="frozen", hint_role="assistant", hint_format="({hint})\n\n").hint_role == "assistant"
    assert Mode.from_cfg({"name": "opd", "teacher": "frozen", "hint_role": "system"}).hint_role == "system"


def test_mode_reads_hint_contrast_and_rejects_it_without_a_hint():
    from claw.modes import Mode

    cfg = {"name": "combine", "teacher": "frozen", "hint_contrast": "Please try again."}
    assert Mode.from_cfg(cfg).hint_contrast == "Please try again."
    assert Mode.from_cfg({**cfg, "hint_contrast": None}).hint_contrast is None
    with pytest.raises(ValueError, match="mode=rl has no hint"):
        Mode("rl", hint_contrast="Please try again.")
    assert Mode.from_cfg({**cfg, "hint_contrast_scale": 0.5}).hint_contrast_scale == 0.5
    with pytest.raises(ValueError, match="hint_contrast_scale=-1.0 must be"):
        Mode.from_cfg({**cfg, "hint_contrast_scale": -1})


def test_mode_reads_hint_gate_and_rejects_it_without_a_hint():
    from claw.modes import Mode

    assert Mode.from_cfg({"name": "combine", "teacher": "frozen", "hint_gate": "apology"}).hint_gate == "apology"
    assert Mode.from_cfg({"name": "combine", "teacher": "frozen"}).hint_gate is None
    with pytest.raises(ValueError, match="mode.hint_gate is set, but mode=rl has no hint"):
        Mode.from_cfg({"name": "rl", "hint_gate": "apology"})
