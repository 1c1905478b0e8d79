"""Canary traffic's sequential test (claw/guard/canary.py): the normal-mixture confidence sequence by hand,
the decision rule, its false-promotion rate by simulation, session arms, and what refuses canary at start-up.
Canary traffic through a real proxy: tests/test_guard_canary_live.py."""

import math

import pytest
import torch

from claw.guard.canary import CanaryTest, canary_arm, canary_decision, mixture_radius
from claw.guard.decision import LiveReward
from tests.conftest import TINY, make_cfg


def test_mixture_radius_by_hand():
    # n = 16, σ = 1, ρ = 16, α = 0.025: v = σ²n + ρ = 32; r = sqrt(32 · log(32 / (16 · 0.025²))) / 16
    #   = sqrt(32 · log 3200) / 16 = sqrt(32 · 8.0709) / 16 = 16.0708 / 16 = 1.00442
    assert mixture_radius(16, 1.0, 16.0, 0.025) == pytest.approx(1.00442, abs=1e-5)
    # σ = 0.5 quarters σ²: v = 0.25 · 16 + 16 = 20; r = sqrt(20 · log(20 / 0.01)) / 16
    #   = sqrt(20 · 7.6009) / 16 = 12.3296 / 16 = 0.77060
    assert (
        mixture_radius(16, 0.5, 16.0, 0.025)
        == pytest.approx(math.sqrt(20 * math.log(2000)) / 16)
        == pytest.approx(0.77060, abs=1e-5)
    )
    assert mixture_radius(0, 1.0, 16.0, 0.05) == math.inf
    rs = [mixture_radius(n, 1.0, 32.0, 0.05) for n in (8, 64, 512, 4096)]
    assert rs == sorted(rs, reverse=True) and rs[-1] < 0.1  # shrinks like sqrt(log n / n)


def test_difference_interval_and_decisions_by_hand():
    test = CanaryTest(alpha=0.05, margin=0.0, low=-1.0, high=1.0, rho_turns=32.0, max_turns=100)
    # σ = 1, ρ = 32, each arm α/2 = 0.025, n = 64: r = sqrt(96 · log(96 / (32 · 0.025²))) / 64
    #   = sqrt(96 · log 4800) / 64 = sqrt(96 · 8.47637) / 64 = 0.44572; the difference's half-width is 2r = 0.89144
    r = 0.445718
    served = LiveReward().add([1.0, -1.0] * 32)  # mean 0
    good = LiveReward().add([1.0] * 64)  # mean 1
    low, high = test.interval(good, served)
    assert low == pytest.approx(1 - 2 * r, abs=1e-5) and high == pytest.approx(1 + 2 * r, abs=1e-5)
    assert low == pytest.approx(0.10856, abs=1e-5)
    assert canary_decision(good, served, test) == "promote"  # 0.109 > -0
    assert canary_decision(LiveReward().add([-1.0] * 64), served, test) == "reject"  # upper -1 + 0.891 < 0
    half = LiveReward().add([1.0, 1.0, 1.0, -1.0] * 16)  # mean 0.5: [-0.391, 1.391] contains 0
    assert canary_decision(half, served, test) == "continue"
    assert canary_decision(half, served, CanaryTest(margin=0.4, rho_turns=32.0)) == "promote"  # -0.391 > -0.4
    tight = CanaryTest(alpha=0.05, rho_turns=32.0, max_turns=64)
    assert (
        canary_decision(LiveReward().add([1.0, -1.0] * 32), served, tight) == "inconclusive"
    )  # equal arms at the budget
    assert canary_decision(half, LiveReward(), test) == "continue"  # no served outcomes yet: no evidence
    assert test.interval(half, LiveReward()) == (-math.inf, math.inf)


def test_false_promotion_rate_is_at_most_alpha_under_continuous_monitoring():
    """A candidate worse by exactly the margin, checked after every outcome for 2,000 outcomes per arm: the
    fraction of runs that ever promote must stay below α (it is far below: the sequence is conservative)."""
    torch.manual_seed(0)
    runs, steps, test = 200, 2000, CanaryTest(alpha=0.05, margin=0.1, rho_turns=32.0, max_turns=10**9)
    # ±1 rewards: P(+1) = (1 + μ) / 2; served μ = 0, candidate μ = -0.1 = -margin (the worst case of H0)
    cand = torch.where(torch.rand(runs, steps) < 0.45, 1.0, -1.0).cumsum(1)
    serv = torch.where(torch.rand(runs, steps) < 0.5, 1.0, -1.0).cumsum(1)
    n = torch.arange(1, steps + 1, dtype=torch.float64)
    r = torch.tensor([mixture_radius(int(k), 1.0, 32.0, 0.025) for k in n.tolist()], dtype=torch.float64)
    low = (cand / n) - (serv / n) - 2 * r
    promoted = (low > -test.margin).any(1).double().mean().item()
    assert promoted <= test.alpha
    # and the test has power: a candidate better by 0.3 is promoted in most runs within the same budget
    better = torch.where(torch.rand(runs, steps) < 0.65, 1.0, -1.0).cumsum(1)
    assert ((better / n) - (serv / n) - 2 * r > -test.margin).any(1).double().mean().item() > 0.8
    # the same numbers through canary_decision, for one run
    c = LiveReward().add(torch.where(torch.rand(500) < 0.9, 1.0, -1.0).tolist())
    s = LiveReward().add(torch.where(torch.rand(500) < 0.5, 1.0, -1.0).tolist())
    assert canary_decision(c, s, test) == "promote"


def test_sessions_stay_in_their_arm_and_the_fraction_holds():
    ids = [f"session-{k}" for k in range(40_000)]
    arms = [canary_arm(s, 0.1) for s in ids]
    assert arms == [canary_arm(s, 0.1) for s in ids]  # every turn of a session in the same arm
    assert 0.095 < sum(arms) / len(arms) < 0.105  # binomial sd 0.0015
    assert not any(canary_arm(s, 0.0) for s in ids[:100]) and all(canary_arm(s, 1.0) for s in ids[:100])
    assert [canary_arm(s, 0.5, salt="v3") for s in ids[:64]] != [canary_arm(s, 0.5, salt="v4") for s in ids[:64]]
    with pytest.raises(ValueError, match="fraction"):
        canary_arm("s", 1.5)


def test_canary_refuses_what_cannot_serve_it_at_start_up(tmp_path):
    """Engines with one weight set, sources without live sessions, lockstep users, a mode without rewards and
    max_lag=0 fail in `validate` (before any model loads) and in build_guard, naming the fix."""
    from claw.config import ConfigError, validate
    from claw.guard import build_guard

    proxy = ["source=proxy", "judge=rule", "algo=reinforce", "model=tiny", "logger=none", "guard=canary"]
    for engine in ("vllm", "vllm_server"):
        extra = ["layout=split_cpu"] if engine == "vllm_server" else []
        cfg = make_cfg([*proxy, f"engine={engine}", *extra], tmp_path)
        with pytest.raises(ConfigError, match="only engine=hf holds") as e:
            validate(cfg)
        assert f"engine={engine} holds one" in str(e.value) and "use engine=hf" in str(e.value)
        with pytest.raises(ConfigError, match="use engine=hf"):
            build_guard(cfg, tmp_path, None, 0)

    class OneWeightSet:  # what engine=auto may resolve to: an engine without load_canary
        pass

    with pytest.raises(ConfigError, match="engine=OneWeightSet holds one"):
        build_guard(make_cfg([*proxy, "engine=auto"], tmp_path), tmp_path, OneWeightSet(), 0)
    with pytest.raises(ConfigError, match="source=dataset has none"):
        build_guard(make_cfg([*TINY, "guard=ope", "guard.checks=[canary]"], tmp_path), tmp_path, None, 0)
    users = ["source=simulated_user", "judge=rule", "algo=reinforce", "model=tiny", "guard=canary", "engine=hf"]
    with pytest.raises(ConfigError, match="source.schedule=free"):
        validate(make_cfg(users, tmp_path))
    validate(make_cfg([*users, "source.schedule=free"], tmp_path))  # free-running users: canary works
    with pytest.raises(ConfigError, match="mode=opd judges none"):
        validate(make_cfg([*proxy, "engine=hf", "mode=opd", "mode.teacher=frozen"], tmp_path))
    with pytest.raises(ConfigError, match="max_lag >= 1"):
        validate(make_cfg([*proxy, "engine=hf", "guard.max_lag=0"], tmp_path))
    with pytest.raises(ConfigError, match="fraction must be in"):
        validate(make_cfg([*proxy, "engine=hf", "guard.canary.fraction=1.0"], tmp_path))
    with pytest.raises(ConfigError, match="after_reject"):
        validate(make_cfg([*proxy, "engine=hf", "guard.canary.after_reject=ignore"], tmp_path))
    with pytest.raises(ConfigError, match="unknown"):
        build_guard(make_cfg([*TINY, "guard=ope", "guard.checks=[ope,vibes]"], tmp_path), tmp_path, None, 0)


def test_guard_canary_config_reaches_the_guard(tmp_path):
    from claw.guard import build_guard
    from claw.guard.canary import CanarySettings

    cfg = make_cfg(
        ["source=proxy", "judge=rule", "algo=reinforce", "model=tiny", "logger=none", "engine=hf", "guard=canary",
         "guard.canary.fraction=0.25", "guard.canary.alpha=0.01", "guard.canary.margin=0.2",
         "guard.canary.max_turns=64", "guard.canary.timeout_s=30", "guard.canary.after_reject=continue"],
        tmp_path,
    )  # fmt: skip
    guard = build_guard(cfg, tmp_path, None, 0)
    assert guard.checks == ("ope", "kl", "canary")
    assert guard.canary == CanarySettings(
        fraction=0.25,
        test=CanaryTest(alpha=0.01, margin=0.2, max_turns=64),
        timeout_s=30.0,
        after_reject="continue",
    )
    assert build_guard(make_cfg([*TINY, "guard=ope"], tmp_path), tmp_path, None, 0).canary is None
