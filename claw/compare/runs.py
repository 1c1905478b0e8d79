"""Runs on disk and the settings they belong to: `load_runs` reads every run under a directory (config, eval.json
or summary.json, metrics.csv rows, the overrides given), `settings` pools them by setting and names each setting
by the overrides that differ between settings."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf

from claw.provenance import in_setting, name_of, setting


class CompareError(Exception):
    """A problem with the input (no runs, unknown metric): reported with exit code 2."""


@dataclass
class Run:
    path: Path
    name: str  # path relative to the directory searched
    config: dict[str, Any]  # flattened: dotted keys -> scalars and lists
    eval: dict[str, Any] = field(default_factory=dict)  # eval.json (or summary.json's "eval")
    rows: list[dict[str, str]] = field(default_factory=list)  # metrics.csv rows, all launches in order
    overrides: list[str] | None = None  # as given on the command line; None: the run kept no record of them

    @property
    def seed(self) -> Any:
        return self.config.get("seed")


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(node, dict):
        return {prefix: node}
    flat: dict[str, Any] = {}
    for key, value in node.items():
        flat.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def _read_rows(run_dir: Path) -> list[dict[str, str]]:
    launches = [d for d in (run_dir / "csv").glob("*") if d.is_dir() and d.name.isdigit()]
    rows: list[dict[str, str]] = []
    for launch in sorted(launches, key=lambda d: int(d.name)):
        path = launch / "metrics.csv"
        if path.exists():
            with path.open(newline="") as f:
                rows.extend(csv.DictReader(f))
    return rows


def _overrides(run_dir: Path, summary: dict[str, Any]) -> list[str] | None:
    """summary.json's provenance.overrides, else .hydra/overrides.yaml. A resumed run's summary holds the resume
    command's overrides (`resume=<dir> steps=20`): its first launch's, when Hydra wrote them here, come first."""
    hydra_file = run_dir / ".hydra" / "overrides.yaml"
    first = [str(o) for o in yaml.safe_load(hydra_file.read_text()) or []] if hydra_file.exists() else None
    given = (summary.get("provenance") or {}).get("overrides")
    if given is None:
        return first
    given = [str(o) for o in given]
    if first is not None and any(o.lstrip("+").startswith("resume=") for o in given):
        return first + given
    return given


def load_runs(directory: str | Path) -> list[Run]:
    """Every run under `directory` (recursively), sorted by path."""
    root = Path(directory)
    runs = []
    for cfg_path in sorted(root.rglob("config.yaml")):
        run_dir = cfg_path.parent
        if not ((run_dir / "summary.json").exists() or (run_dir / "csv").is_dir()):
            continue
        config = OmegaConf.to_container(OmegaConf.load(cfg_path), resolve=False)
        summary = json.loads((run_dir / "summary.json").read_text()) if (run_dir / "summary.json").exists() else {}
        if (run_dir / "eval.json").exists():
            evals = json.loads((run_dir / "eval.json").read_text())
        else:
            evals = summary.get("eval") or {}
        name = str(run_dir.relative_to(root)) if run_dir != root else "."
        runs.append(Run(run_dir, name, _flatten(config), evals, _read_rows(run_dir), _overrides(run_dir, summary)))
    return runs


def _show(value: Any) -> str:  # one line: control characters escaped
    return value.encode("unicode_escape").decode() if isinstance(value, str) else json.dumps(value, default=str)


def _config_key(run: Run) -> str:
    return json.dumps({k: v for k, v in run.config.items() if in_setting(k)}, sort_keys=True, default=str)


def _inferred_overrides(runs: list[Run]) -> dict[str, list[str]]:
    """Overrides for the runs that kept no record of theirs (one still running with its run_dir outside Hydra's
    output directory, or older than summary.json's provenance): those of a recorded run with the same config
    less seeds and paths; otherwise the config values that differ among the unmatched runs, over the keys all
    of them have."""
    recorded = {_config_key(r): r.overrides for r in runs if r.overrides is not None}
    inferred = {r.name: recorded[_config_key(r)] for r in runs if r.overrides is None and _config_key(r) in recorded}
    rest = [r for r in runs if r.overrides is None and r.name not in inferred]
    if rest:
        keys = set.intersection(*(set(r.config) for r in rest))
        differing = sorted(k for k in keys if in_setting(k) and len({_show(r.config[k]) for r in rest}) > 1)
        inferred |= {r.name: [f"{k}={_show(r.config[k])}" for k in differing] for r in rest}
    return inferred


def setting_of(run: Run, inferred: dict[str, list[str]] | None = None) -> dict[str, str]:
    """claw.provenance.setting of the run's overrides (of `inferred[run.name]` for a run without a record)."""
    overrides = run.overrides if run.overrides is not None else (inferred or {}).get(run.name, [])
    return setting(overrides)


def label_of(setting_: dict[str, str], keys: list[str]) -> str:
    """The setting named by `keys` alone (those that differ between settings); "default" when it sets none."""
    return name_of({k: setting_[k] for k in keys if k in setting_}, max_len=10_000)


def settings(runs: list[Run]) -> list[tuple[str, dict[str, str], list[Run]]]:
    """(label, setting, its runs) per setting, in the order first seen. A label is the setting named by the
    overrides that differ between settings ("mode=rl", "engine=hf", "default" for the one that sets none of
    them); a lone setting is "all"."""
    inferred = _inferred_overrides(runs)
    by_setting: dict[str, tuple[dict[str, str], list[Run]]] = {}
    for run in runs:
        s = setting_of(run, inferred)
        by_setting.setdefault(json.dumps(s), (s, []))[1].append(run)
    found = list(by_setting.values())
    if len(found) == 1:
        return [("all", *found[0])]
    keys = [k for k in sorted({k for s, _ in found for k in s}) if len({s.get(k) for s, _ in found}) > 1]
    return [(label_of(s, keys), s, members) for s, members in found]


def group_settings(runs: list[Run]) -> dict[str, list[Run]]:
    """Runs by setting label (see `settings`)."""
    return {label: members for label, _, members in settings(runs)}
