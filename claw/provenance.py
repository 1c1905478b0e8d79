"""What a run's numbers came from: the commit (and whether the tree had uncommitted changes), the date, the engine,
and the overrides the user gave. train.py writes it into `summary.json`; experiment tables copy it per run, so
runs of different code are never pooled by name."""

from __future__ import annotations

import datetime as dt
import hashlib
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout


def code_version() -> dict[str, Any]:
    """{commit, dirty, diff_sha1}: HEAD, whether tracked files differ from it, and a hash of that difference (two
    runs with the same commit and diff hash ran the same code); None values outside a git checkout."""
    commit = _git("rev-parse", "HEAD")
    diff = _git("diff", "HEAD", "--", ".")
    return {
        "commit": commit.strip() if commit else None,
        "dirty": bool(diff) if diff is not None else None,
        "diff_sha1": hashlib.sha1(diff.encode()).hexdigest() if diff else None,
    }


def provenance(engine: str, overrides: list[str] | None) -> dict[str, Any]:
    return {
        **code_version(),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "engine": engine,
        "overrides": list(overrides or []),
    }


# Not part of a setting: which seed, where the run was written, what it resumed, Hydra's own keys.
NOT_SETTING = ("seed", "run_dir", "resume", "trainer.default_root_dir")


def in_setting(key: str) -> bool:
    """Whether an override of `key` (`optim.lr`, `~guard`, `hydra/launcher`, `source.seed`) defines a setting."""
    bare = key.lstrip("~").split("@")[0]
    seed = bare == "seed" or bare.endswith(".seed")
    return not (seed or bare in NOT_SETTING or bare.split("/")[0].split(".")[0] == "hydra")


def setting(overrides: list[str]) -> dict[str, str]:
    """The overrides that define a setting, key -> value, sorted by key: runs of one setting differ only in their
    seed (`seed` or a group's `<group>.seed`), run directory or resume. Values are read as Hydra reads them
    (`optim.lr=1e-4` and `optim.lr=0.0001` are one setting); `+key=v` and `++key=v` are `key=v`; a deletion `~key`
    is the key `~key`; a key given twice keeps its last value."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    given: dict[str, str] = {}
    for text in overrides:
        try:
            override = parser.parse_override(text)
        except HydraException:  # not Hydra's grammar (hand-written): taken as written
            key, _, value = text.partition("=")
            key = key if key.startswith("~") else key.lstrip("+")
        else:
            key = override.key_or_group + (f"@{override.package}" if override.package else "")
            value = override.get_value_element_as_str()
            if override.is_delete():
                key, value = f"~{key}", value if override.value() is not None else ""
        if in_setting(key):
            given[key] = value
    return dict(sorted(given.items()))


def setting_name(overrides: list[str], max_len: int = 128) -> str:
    """The name of `setting(overrides)`: the W&B group of a run, the setting `claw.compare` pools its seeds in."""
    return name_of(setting(overrides), max_len)


def name_of(given: dict[str, str], max_len: int = 128) -> str:
    """`key=value key=value ...` (a deletion as `~key`), "default" for none. Past `max_len` characters (W&B's
    limit on a group) the tail becomes a hash of the whole, so different settings keep different names."""
    name = " ".join(f"{k}={v}" if v or not k.startswith("~") else k for k, v in given.items()) or "default"
    if len(name) <= max_len:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:10]
    return f"{name[: max_len - len(digest) - 1]}~{digest}"


def command_overrides() -> list[str] | None:
    """The overrides of this `python train.py ...` (one job's values in a sweep), None outside Hydra's CLI."""
    from hydra.core.hydra_config import HydraConfig

    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else None
