"""Start-up: validation, the run directory, resuming, and the `mode` × `algo` → objective resolution.

Impossible combinations fail before any model loads, with a message that names the fix. A saved run resumes
with today's code: `upgrade` brings a config saved by an older claw to today's shape.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from claw.advantages import ADVANTAGES
from claw.console import quiet_console
from claw.losses import AGGREGATIONS, KL_ESTIMATORS, LOSSES
from claw.modes import Mode
from claw.objective import ObjectiveConfig, TISConfig
from claw.redaction import redacted_left, save_config

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"


class ConfigError(ValueError):
    pass


def compose_config(overrides: list[str], run_dir: str | Path | None = None) -> DictConfig:
    """The config `python train.py <overrides>` would get, composed in-process (tests, benchmarks)."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="train", overrides=overrides)
    if run_dir is not None:
        cfg.run_dir = str(run_dir)
    return cfg


def objective_from_cfg(cfg: DictConfig) -> ObjectiveConfig:
    """mode picks the terms and weights, algo the estimator, clip, aggregation and critic.

    | algo \\ mode      | rl                  | opd        | combine                                        |
    |-------------------|---------------------|------------|------------------------------------------------|
    | grpo/rloo/…       | algo.advantage      | opd(w_opd) | combine(rl_estimator=algo.advantage, w_rl, w_opd) |
    | ppo (critic)      | gae(w_rl=1, w_opd=0) | gae(0, w_opd) | gae(w_rl, w_opd)                            |

    w_opd weighs the OPD gap the same way under every algo: the critic-free advantage w_opd · gap, or GAE's
    token reward w_opd · gap (claw/modes.py).
    """
    mode, algo = Mode.from_cfg(cfg.mode), cfg.algo
    scalar_kwargs = OmegaConf.to_container(algo.advantage_kwargs, resolve=True) if algo.advantage_kwargs else {}
    critic = (
        {"gamma": algo.gamma, "lam": algo.lam, "whiten": algo.get("whiten_advantages", True)} if algo.critic else None
    )
    advantage, kwargs = mode.advantage(algo.advantage, scalar_kwargs, critic)
    return ObjectiveConfig(
        advantage=advantage,
        advantage_kwargs=kwargs,
        loss=algo.loss,
        clip_low=algo.clip_low,
        clip_high=algo.clip_high,
        dual_clip=algo.dual_clip,
        loss_agg=algo.loss_agg,
        loss_agg_norm=algo.get("loss_agg_norm"),
        tis=TISConfig(**OmegaConf.to_container(algo.tis, resolve=True)),
        kl_coef=algo.kl_coef,
        kl_estimator=algo.kl_estimator,
        kl_opening=int(algo.get("kl_opening", 0) or 0),
        entropy_coef=algo.entropy_coef,
        critic=bool(algo.critic),
        value_coef=algo.get("value_coef", 0.5),
        value_clip=algo.get("value_clip", 0.2),
        topk_coef=mode.topk_coef if mode.topk else 0.0,
        baseline_momentum=algo.baseline_momentum,
        baseline_warm_start=algo.get("baseline_warm_start", True),
        overlong=algo.overlong.mode if algo.get("overlong") else "none",
        overlong_penalty=float(algo.overlong.get("penalty", 0.0)) if algo.get("overlong") else 0.0,
        negative_weight=float(algo.get("negative_weight", 1.0)),
    )


def trainer_processes(layout: DictConfig) -> int:
    """How many trainer processes the layout asks for (devices × nodes; "auto"/-1 count as several)."""
    devices = layout.devices
    n = (
        len(devices)
        if not isinstance(devices, int | str)
        else (int(devices) if str(devices).lstrip("-").isdigit() else 2)
    )
    return (n if n > 0 else 2) * int(layout.get("num_nodes", 1))


def layout_problems(layout: DictConfig, engine: DictConfig) -> list[str]:
    """What the hardware layout and the engine cannot do together (conf/layout)."""
    problems = []
    if "rollout_devices" in layout and engine.kind != "vllm_server":
        problems.append(
            "layout=split runs the rollout engine as a vLLM server on its own devices: add engine=vllm_server "
            f"(got engine={engine.kind})"
        )
    if engine.kind == "vllm_server" and "rollout_devices" not in layout:
        problems.append(
            "engine=vllm_server starts the rollout server on layout.rollout_devices: use layout=split "
            "(GPUs) or layout=split_cpu"
        )
    devices = layout.devices
    if trainer_processes(layout) > 1:
        if engine.kind == "vllm":
            problems.append(
                "engine=vllm with several trainer processes (DDP or FSDP: layout.devices or layout.num_nodes > 1): "
                "in-process vLLM sets up its own torch.distributed group in rank 0, clashing with the trainer's: "
                "use engine=vllm_server (layout=split: the server is its own process) or engine=hf"
            )
        strategy = str(layout.strategy)
        if strategy not in ("ddp", "fsdp"):
            why = {
                "auto": "name it: layout.strategy=ddp (or fsdp, layout=fsdp)",
                "ddp_spawn": (
                    "ddp_spawn would pickle the engine, the sources and the live HTTP servers into each process; "
                    "use layout.strategy=ddp"
                ),
            }.get(
                strategy,
                f"only ddp and fsdp are supported: {strategy} is not wired to gather the weights rank 0 pushes to "
                "the rollout engine",
            )
            problems.append(f"layout.devices={devices} with layout.strategy={strategy}: {why}")
    return problems


def canary_problems(cfg: DictConfig, engine_kind: str) -> list[str]:
    """What stops `guard.checks` with canary (claw/guard/canary.py) on this config; [] when it is off.
    `engine_kind`: cfg.engine.kind here (auto passes); the engine actually built, in build_guard."""
    g = cfg.get("guard")
    if g is None or not g.enabled or "canary" not in g.get("checks", ()):
        return []
    problems = []
    source = cfg.source.name
    if source not in ("proxy", "simulated_user"):
        problems.append(
            f"guard.checks has canary: canary traffic splits live proxy sessions; source={source} has none (use probe)"
        )
    elif source == "simulated_user" and cfg.source.get("schedule") != "free":
        problems.append(
            "guard.checks has canary with source=simulated_user needs source.schedule=free: under lockstep the next "
            "round of users waits until the trainer has trained this one, and the trainer waits for the canary"
        )
    if engine_kind not in ("hf", "auto"):
        problems.append(
            f"guard.checks has canary: the candidate is served beside the promoted version, from a second weight set "
            f"that only engine=hf holds (engine={engine_kind} holds one); use engine=hf, or drop canary from "
            "guard.checks (ope, kl and probe work on every engine)"
        )
    if not Mode.from_cfg(cfg.mode).uses_reward:
        problems.append(
            f"guard.checks has canary: it compares the arms' judged rewards and mode={cfg.mode.name} judges none; "
            "use mode=rl or mode=combine"
        )
    if g.max_lag < 1:
        problems.append(
            "guard.checks has canary needs guard.max_lag >= 1: with 0 every hold re-publishes the served weights "
            "under the candidate's number, which its canary turns already carry"
        )
    c = g.canary
    if not 0 < c.fraction < 1:
        problems.append(f"guard.canary.fraction must be in (0, 1): both arms need sessions (got {c.fraction})")
    if c.after_reject not in ("reset", "continue"):
        problems.append(f"guard.canary.after_reject must be reset or continue (got {c.after_reject})")
    return problems


def personalize_problems(cfg: DictConfig) -> list[str]:
    """What personalize=per_user (an adapter per user, claw/users/adapters.py) does not combine with."""
    why = "personalize=per_user"
    problems = []
    if cfg.engine.kind == "vllm_server":
        problems.append(f"{why} serves adapters from this process: use engine=vllm or engine=hf (not vllm_server)")
    if trainer_processes(cfg.layout) > 1:
        problems.append(f"{why} trains in one process: use layout=cpu or layout=colocate (got {cfg.layout.strategy})")
    if cfg.guard.get("enabled"):
        problems.append(f"{why} with a guard is not built: each adapter would need its own checks (use guard=none)")
    if cfg.lora.enabled:
        problems.append(f"{why} trains an adapter per user over the frozen base: set lora.enabled=false")
    if cfg.algo.critic or cfg.algo.kl_coef:
        problems.append(f"{why} has no per-user critic or reference: use algo.critic=false and algo.kl_coef=0")
    if cfg.optim.schedule != "constant" or cfg.optim.warmup_steps:
        problems.append(f"{why} trains each adapter at a constant lr: optim.schedule=constant, optim.warmup_steps=0")
    if cfg.mode.get("teacher") == "current":
        problems.append(f"{why}: mode.teacher=current would score with one user's adapter; use frozen (the base)")
    return problems


def check_hardware(layout: DictConfig) -> None:
    """What this machine lacks for the layout (run time only: configs are composed and validated anywhere)."""
    import torch

    if layout.accelerator == "gpu" and not torch.cuda.is_available():
        raise ConfigError(
            "layout.accelerator=gpu but this machine has no CUDA device: "
            "use layout=cpu, or layout=split_cpu for the split layout"
        )


def validate(cfg: DictConfig) -> None:
    """Every problem of `cfg`, as one ConfigError naming the keys; the `mode.*` keys are `Mode`'s to check."""
    problems = []
    algo = cfg.algo
    if algo.advantage not in ADVANTAGES:
        problems.append(f"algo.advantage={algo.advantage!r} is not registered; choose one of {ADVANTAGES.names()}")
    if algo.advantage == "gae" and not algo.critic:
        problems.append("algo.advantage=gae needs a critic: use algo=ppo (or set algo.critic=true)")
    if algo.critic and algo.advantage != "gae":
        problems.append(
            "algo.critic=true trains a value head that only gae uses; set algo.advantage=gae or algo.critic=false "
            f"(got {algo.advantage})"
        )
    if algo.loss not in LOSSES:
        problems.append(f"algo.loss={algo.loss!r} is not registered; choose one of {LOSSES.names()}")
    if algo.loss_agg not in AGGREGATIONS:
        problems.append(f"algo.loss_agg={algo.loss_agg!r}; choose one of {list(AGGREGATIONS)}")
    if algo.loss_agg == "seq-mean-token-sum-norm" and not (algo.get("loss_agg_norm") or 0) > 0:
        problems.append(
            "algo.loss_agg=seq-mean-token-sum-norm needs algo.loss_agg_norm > 0 (a constant: the generation budget)"
        )
    if algo.kl_estimator not in KL_ESTIMATORS:
        problems.append(f"algo.kl_estimator={algo.kl_estimator!r}; choose one of {KL_ESTIMATORS.names()}")
    if algo.get("kl_opening", 0) and not algo.kl_coef:
        problems.append("algo.kl_opening > 0 limits the KL to a reply's opening, but algo.kl_coef is 0: set both")
    if algo.dual_clip is not None and algo.dual_clip <= 1:
        problems.append(f"algo.dual_clip={algo.dual_clip} must be > 1 (or null to turn it off)")
    if algo.tis.level not in ("token", "sequence") or algo.tis.mode not in ("truncate", "mask"):
        problems.append("algo.tis.level must be token|sequence and algo.tis.mode truncate|mask")
    try:
        mode = Mode.from_cfg(cfg.mode)
    except ValueError as e:
        mode = None
        problems.append(str(e))
    if cfg.source.name == "dataset" and cfg.judge.kind != "verifier":
        problems.append(
            f"source=dataset scores samples with its verifier; use judge=verifier (got judge={cfg.judge.kind})"
        )
    if cfg.source.get("conversational") and cfg.judge.kind == "verifier":
        problems.append(
            f"source={cfg.source.name} turns conversations into samples through a judge: "
            "use judge=rule, judge=openai or judge=policy"
        )
    if algo.advantage in ("grpo", "dr_grpo", "rloo") and mode is not None and mode.w_rl and cfg.source.get("n", 1) < 2:
        problems.append(
            f"{algo.advantage} needs groups of at least 2 samples: set source.n>=2, or use algo=reinforce "
            "(running baseline) for groups of one"
        )
    if cfg.steps < 1:
        problems.append("steps must be >= 1")
    problems += layout_problems(cfg.layout, cfg.engine)
    if mode is not None:  # the canary asks the mode whether it judges rewards
        problems += canary_problems(cfg, cfg.engine.kind)
    if cfg.get("personalize") is not None:
        problems += personalize_problems(cfg)
    if cfg.batch_size < 1 or cfg.optim.micro_batch_size < 1:
        problems.append("batch_size and optim.micro_batch_size must be >= 1")
    if algo.minibatches > cfg.batch_size:
        problems.append(f"algo.minibatches={algo.minibatches} exceeds batch_size={cfg.batch_size}")
    if problems:
        raise ConfigError("invalid configuration:\n  - " + "\n  - ".join(problems))


def build(node: DictConfig, **live: Any) -> Any:
    """`node._target_` called with the node's keys — built by Hydra: nested `_target_`s too, containers as plain
    dicts and lists — and `live`, the run's objects (policy, engine, callbacks...), passed as they are. As
    `instantiate` keywords they would be merged into the config first: a dataclass read as a structured
    config, a DictConfig's `_target_`s built."""
    return instantiate(node, _partial_=True, _convert_="all")(**live)


def prepare_run(cfg: DictConfig, leader: bool = True) -> Path:
    """Everything before the first model loads: validation, the hardware check (before a server starts), the
    run directory and its config.yaml (API keys redacted; written once, by the leader: DDP rank 0), the quiet
    console (library logs -> <run dir>/engine.log), torch's threads and the seed. Returns the run directory."""
    import lightning as L
    import torch

    validate(cfg)
    check_hardware(cfg.layout)
    run_dir = Path(cfg.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    quiet_console(run_dir, verbose=bool(cfg.verbose))
    if leader and not (run_dir / "config.yaml").exists():
        save_config(cfg, run_dir / "config.yaml")  # claw/redaction.py
    if cfg.layout.torch_threads:
        torch.set_num_threads(int(cfg.layout.torch_threads))
    L.seed_everything(cfg.seed, verbose=False)
    return run_dir


# Where a saved run's source `_target_` lives now (claw/sources/), so runs saved before the move still resume.
MOVED_TARGETS = {
    "claw.proxy.source.ProxySource": "claw.sources.proxy.source.ProxySource",
    "claw.rollout.simulated_user.SimulatedUserSource": "claw.sources.simulated_user.SimulatedUserSource",
    "claw.rollout.dataset_source.DatasetSource": "claw.sources.dataset.DatasetSource",
}
MOVED_MODULES = {"claw.policy.": "claw.models."}  # the model loaders' module, renamed after what it holds
# Groups built by `_target_`; a group saved before they had one is named by its `kind`.
LOGGER_TARGETS = {
    "csv": "claw.tracking.csv_tracking",
    "wandb": "claw.tracking.wandb_tracking",
    "none": "claw.tracking.no_tracking",
}
ENGINE_TARGET = "claw.engine.build_engine"
# Keys added after runs were saved, with what those runs did without them (so a resumed run goes on the same way).
ADDED_KEYS = {
    "checkpoint_interval_s": 0,
    "checkpoint_async": True,
    "verbose": False,
    "layout.collective_timeout_min": 120,
    "release_memory": False,
    "engine.score_batch_size": None,  # every row in one scoring pass, as before the chunks
}
ADDED_BLOCKS = ("trainer", "callbacks")  # conf/train.yaml's; a run saved before them gets today's
_ABSENT = object()


def moved_target(target: str) -> str:
    """Where a `_target_` saved by an older claw lives now (unchanged when it did not move)."""
    if target in MOVED_TARGETS:
        return MOVED_TARGETS[target]
    for old, new in MOVED_MODULES.items():
        if target.startswith(old):
            return new + target[len(old) :]
    return target


def upgrade(saved: DictConfig) -> DictConfig:
    """A config saved by an older claw in today's shape: moved `_target_`s, the `_target_`s of groups that
    gained one (logger, engine), the blocks and keys it predates. A config saved by today's claw is unchanged."""
    for group in ("source", "model"):  # a run saved before these modules moved (claw/sources/, claw/models.py)
        target = OmegaConf.select(saved, f"{group}._target_")
        if isinstance(target, str):
            saved[group]._target_ = moved_target(target)
    if "logger" in saved and "_target_" not in saved.logger:
        kind = saved.logger.pop("kind", "csv")
        saved.logger = OmegaConf.merge({"_target_": LOGGER_TARGETS[kind]}, saved.logger)
    if "engine" in saved and "_target_" not in saved.engine:
        saved.engine = OmegaConf.merge({"_target_": ENGINE_TARGET}, saved.engine)
    today = OmegaConf.load(CONF_DIR / "train.yaml")
    for block in ADDED_BLOCKS:
        if block not in saved:
            saved[block] = today[block]
    for key, value in ADDED_KEYS.items():
        parent = key.rpartition(".")[0]
        if OmegaConf.select(saved, key, default=_ABSENT) is _ABSENT and (not parent or parent in saved):
            OmegaConf.update(saved, key, value)
    return saved


def resolve_resume(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    """`resume=<run dir>`: that run's saved config, with this command's other overrides on top."""
    if not cfg.get("resume"):
        return cfg
    run_dir = Path(cfg.resume)
    saved = run_dir / "config.yaml"
    if not saved.is_file():
        sys.exit(
            f"resume={cfg.resume}: no config.yaml there; pass the directory of an earlier run (runs/<date>/<time>)."
        )
    base = upgrade(OmegaConf.load(saved))
    extra = [
        o.lstrip("+")
        for o in overrides
        if "=" in o and not o.split("=", 1)[0].lstrip("+~").startswith(("resume", "hydra", "run_dir"))
    ]
    for o in extra:
        key = o.split("=", 1)[0]
        if isinstance(OmegaConf.select(base, key), DictConfig):
            sys.exit(
                f"resume: `{o}` would swap the config group `{key}` of a run in progress; "
                "resume keeps the run's groups (change values, e.g. steps=20)"
            )
    merged = OmegaConf.merge(base, OmegaConf.from_dotlist(extra))
    merged.run_dir = str(run_dir)
    merged.resume = str(run_dir)
    if missing := redacted_left(merged):
        sys.exit(
            f"resume: {', '.join(missing)} was given literally and is not stored; pass it again ({missing[0]}=...)"
        )
    return merged
