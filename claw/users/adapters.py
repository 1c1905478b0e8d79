"""`personalize=per_user`: a LoRA adapter per user over one frozen base, trained only on that user's turns.

`AdapterBank` holds them for the trainer:
- a user's adapter is created on their first trained batch, its A seeded by (run seed, user) and its B zero, so it
  starts as the base and the same config and seed give the same adapter;
- each adapter has its own optimizer (AdamW) and its own version: version k is the adapter after the user's k-th
  trained batch; 0 is the base, which serves a user before their first update;
- at most `max_resident` adapters (and their optimizers) are held in memory; the least recently used goes out
  first, its optimizer state written to disk;
- every version is written as a PEFT directory (adapter_config.json, adapter_model.safetensors) that vLLM loads with
  a `LoRARequest` and `peft` with `PeftModel.from_pretrained`.

On disk, under the run directory: `adapters/<name>/v<k>/` (the last `keep_versions` of each user, and the one the
checkpoint holds) and `adapters/<name>/state-v<k>.pt` (the optimizer at version k), `<name>` a hash of the user id
(`adapter_name`); `adapters/<name>/user.json` says whose it is. The trainer's checkpoint holds each user's version
(`state_dict`), so a restart loads exactly the adapters the checkpoint's ledger trained, never a later one; a
version written after the checkpoint and lost with the process keeps its number, and the restored adapter is served
under a new one.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

PLACEHOLDER = "claw_base"  # the adapter peft needs to exist; never trained, B = 0 (the base), never served


def adapter_name(user: str) -> str:
    """The adapter's name and directory for `user`: a hash, so any user id makes a valid module name and path."""
    return "u" + hashlib.sha256(user.encode()).hexdigest()[:16]


@dataclass
class _Resident:
    user: str
    optimizer: torch.optim.Optimizer
    dirty: bool = False  # trained since its optimizer state was last written


class AdapterBank:
    def __init__(
        self,
        model: torch.nn.Module,
        run_dir: str | Path,
        r: int = 8,
        alpha: int = 16,
        dropout: float = 0.0,
        target_modules: list[str] | None = None,
        lr: float = 1e-5,
        betas: tuple[float, float] = (0.9, 0.999),
        weight_decay: float = 0.0,
        max_resident: int = 8,
        keep_versions: int = 3,
        seed: int = 0,
    ) -> None:
        from peft import LoraConfig, get_peft_model

        if max_resident < 1:
            raise ValueError(f"max_resident={max_resident}: at least one adapter must fit in memory")
        self.config = LoraConfig(
            r=r,
            lora_alpha=alpha,
            lora_dropout=dropout,
            target_modules=list(target_modules or ["q_proj", "k_proj", "v_proj", "o_proj"]),
            bias="none",
        )
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            self.model = get_peft_model(model, self.config, adapter_name=PLACEHOLDER)
        self.model.requires_grad_(False)
        self.dir = Path(run_dir) / "adapters"
        self.lr, self.betas, self.weight_decay = lr, tuple(betas), weight_decay
        self.max_resident, self.keep_versions, self.seed = max_resident, keep_versions, seed
        self.versions: dict[str, int] = {}  # user -> their adapter's version (0: none yet, the base)
        self.saved: dict[str, int] = {}  # user -> the version the last checkpoint holds (never deleted from disk)
        self.resident: OrderedDict[str, _Resident] = OrderedDict()  # adapter name -> in memory, least recent first
        self.active: str | None = None
        self.loads = 0  # adapters brought (back) into memory
        self.switch_s = 0.0  # seconds spent making adapters resident and writing evicted optimizer states

    # -- which user trains ---------------------------------------------------------------------
    def version(self, user: str) -> int:
        return self.versions.get(user, 0)

    def activate(self, user: str) -> torch.optim.Optimizer:
        """Make `user`'s adapter the one that trains (and the only one with gradients); returns its optimizer."""
        name = adapter_name(user)
        if name not in self.resident:
            t0 = time.perf_counter()
            self._make_resident(user, name)
            self.switch_s += time.perf_counter() - t0
        self.resident.move_to_end(name)
        if self.active != name:
            self.model.set_adapter(name)  # peft: the active adapter's weights train, every other one is frozen
            self.active = name
        self.resident[name].dirty = True
        return self.resident[name].optimizer

    def parameters(self, user: str) -> list[torch.nn.Parameter]:
        """`user`'s resident adapter weights, in a fixed order (the optimizer's)."""
        name = adapter_name(user)
        return [p for n, p in sorted(self.model.named_parameters()) if f".{name}." in n]

    def _make_resident(self, user: str, name: str) -> None:
        while len(self.resident) >= self.max_resident:
            self._evict(next(iter(self.resident)))
        with torch.random.fork_rng():  # A from (seed, user); B = 0, so a new adapter is the base
            torch.manual_seed(self.seed * 1_000_003 + int(name[1:9], 16))
            self.model.add_adapter(name, self.config)
        version = self.version(user)
        params = self.parameters(user)
        for p in params:
            p.requires_grad_(True)
        optimizer = torch.optim.AdamW(params, lr=self.lr, betas=self.betas, weight_decay=self.weight_decay)
        if version:
            self._load_weights(name, self._version_dir(name, version))
            optimizer.load_state_dict(torch.load(self._state_path(name, version), weights_only=True))
        else:
            (self.dir / name).mkdir(parents=True, exist_ok=True)
            (self.dir / name / "user.json").write_text(json.dumps({"user": user}))
        self.resident[name] = _Resident(user, optimizer)
        self.loads += 1

    def _evict(self, name: str) -> None:
        t0 = time.perf_counter()
        resident = self.resident.pop(name)
        if resident.dirty:
            self._write_state(name, resident)
        if self.active == name:
            self.model.set_adapter(PLACEHOLDER)
            self.active = None
        self.model.delete_adapter(name)
        self.switch_s += time.perf_counter() - t0

    # -- versions on disk ---------------------------------------------------------------------------
    def promote(self, user: str) -> tuple[int, Path]:
        """After a trained batch: `user`'s adapter as its next version, written as a PEFT directory. Returns the
        version and the directory (what an engine serves, claw/engine/base.py `ServesAdapters`)."""
        name = adapter_name(user)
        if name not in self.resident:
            raise RuntimeError(f"user {user!r}'s adapter is not in memory: only a trained adapter is promoted")
        version = max(self.version(user), self._highest_on_disk(name)) + 1
        path = self._version_dir(name, version)
        self._write_peft(name, path)
        self.versions[user] = version
        self._prune(name, user)
        return version, path

    def base_path(self) -> Path:
        """The base as a zero adapter (the placeholder, B = 0), written once: what serves a user with none yet
        (claw/engine/base.py `AdapterTable`)."""
        path = self.dir / "base" / "v0"
        if not path.is_dir():
            self._write_peft(PLACEHOLDER, path)
        return path

    def served(self) -> list[tuple[str, int, Path]]:
        """(user, version, directory) for every user with an adapter: what an engine serves after a restart."""
        return [(u, v, self._version_dir(adapter_name(u), v)) for u, v in sorted(self.versions.items()) if v]

    def save(self) -> dict[str, Any]:
        """Write every resident adapter's optimizer state at its version; returns what the checkpoint records."""
        for name, resident in self.resident.items():
            if resident.dirty and self.version(resident.user):
                self._write_state(name, resident)
        self.saved = dict(self.versions)
        return {"versions": dict(self.versions)}

    def load(self, state: dict[str, Any]) -> None:
        """A restart: each user's adapter at the checkpoint's version. One that was promoted past it and lost with
        the process is served under a number above every version on disk (no two adapters share a number)."""
        for name in list(self.resident):
            self.resident.pop(name)
            self.model.delete_adapter(name)
        self.active = None
        self.model.set_adapter(PLACEHOLDER)
        self.versions, self.saved = {}, {}
        for user, version in state.get("versions", {}).items():
            name = adapter_name(user)
            if not (self.dir / name).is_dir():  # forgotten (python -m claw.users forget): they start from the base
                continue
            highest = self._highest_on_disk(name)
            if highest > version:
                fresh = highest + 1
                shutil.copytree(self._version_dir(name, version), self._version_dir(name, fresh))
                shutil.copyfile(self._state_path(name, version), self._state_path(name, fresh))
                version = fresh
            self.versions[user] = self.saved[user] = version

    def _write_peft(self, name: str, path: Path) -> None:
        """Adapter `name` as a PEFT directory at `path`, whole or absent (written aside, then renamed)."""
        from peft import get_peft_model_state_dict
        from safetensors.torch import save_file

        tmp = path.with_name(path.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        weights = get_peft_model_state_dict(self.model, adapter_name=name)
        save_file(
            {k: v.detach().to("cpu").contiguous() for k, v in weights.items()}, str(tmp / "adapter_model.safetensors")
        )
        self.model.peft_config[name].save_pretrained(str(tmp))
        tmp.rename(path)

    def _write_state(self, name: str, resident: _Resident) -> None:
        version = self.version(resident.user)
        path = self._state_path(name, version)
        torch.save(resident.optimizer.state_dict(), path.with_suffix(".tmp"))
        path.with_suffix(".tmp").rename(path)
        resident.dirty = False

    def _load_weights(self, name: str, directory: Path) -> None:
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        result = set_peft_model_state_dict(self.model, load_file(str(directory / "adapter_model.safetensors")), name)
        missing = [k for k in result.missing_keys if f".{name}." in k]
        if missing:
            raise RuntimeError(f"{directory}: adapter weights missing for {missing[:3]}")

    def _version_dir(self, name: str, version: int) -> Path:
        return self.dir / name / f"v{version}"

    def _state_path(self, name: str, version: int) -> Path:
        return self.dir / name / f"state-v{version}.pt"

    def _highest_on_disk(self, name: str) -> int:
        found = [int(p.name[1:]) for p in (self.dir / name).glob("v*") if p.name[1:].isdigit()]
        return max(found, default=0)

    def _prune(self, name: str, user: str) -> None:
        """Keep the newest `keep_versions` versions of a user and the checkpoint's; remove the others."""
        keep = {self.saved.get(user, 0)}
        versions = sorted(int(p.name[1:]) for p in (self.dir / name).glob("v*") if p.name[1:].isdigit())
        keep.update(versions[-self.keep_versions :])
        for v in versions:
            if v not in keep:
                shutil.rmtree(self._version_dir(name, v), ignore_errors=True)
                self._state_path(name, v).unlink(missing_ok=True)
