"""`engine=hf` with per-user adapters (personalize=per_user): the engine's copy of the policy wrapped by peft, each
served adapter loaded under its own name when a request first needs it, at most `max_resident` (and the base's)
held, least recently used out. A call's rows are decoded in groups, one adapter per group (claw/engine/hf.py)."""

from __future__ import annotations

from collections import OrderedDict

import torch

from claw.engine.base import ServedAdapter


class PeftAdapters:
    def __init__(self, model: torch.nn.Module, max_resident: int = 8) -> None:
        self.model = model  # the plain model until the first adapter is loaded, then its PeftModel
        self.max_loaded = max_resident + 1  # and the base's zero adapter
        self._loaded: OrderedDict[int, str] = OrderedDict()  # lora_id -> peft adapter name, least recent first
        self.loads = 0

    def use(self, adapter: ServedAdapter | None) -> torch.nn.Module:
        """The model with `adapter` active (None: the plain weights); the caller holds the engine's lock."""
        if adapter is None:
            if self._loaded:
                raise RuntimeError("a request without an adapter on an engine serving adapters: serve the base's")
            return self.model
        name = f"a{adapter.lora_id}"
        if adapter.lora_id not in self._loaded:
            self._load(adapter.path, name)
            self._loaded[adapter.lora_id] = name
        self._loaded.move_to_end(adapter.lora_id)
        self.model.set_adapter(name)
        return self.model

    def _load(self, path: str, name: str) -> None:
        from peft import PeftModel

        if not self._loaded:
            self.model = PeftModel.from_pretrained(self.model, path, adapter_name=name).eval()
        else:
            while len(self._loaded) >= self.max_loaded:
                _, old = self._loaded.popitem(last=False)
                self.model.delete_adapter(old)
            self.model.load_adapter(path, adapter_name=name)
        self.model.requires_grad_(False)
        self.loads += 1
