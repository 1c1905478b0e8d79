"""`source=proxy`: an OpenAI-compatible server in the training process; live turns become samples.

python train.py source=proxy mode=combine judge=rule algo=reinforce
then point any OpenAI client at http://127.0.0.1:8000/v1 (the URL is also written to <run dir>/proxy.json).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from claw.engine.base import Engine
from claw.judge.build import Judges
from claw.judge.teacher import Teacher
from claw.rollout.queue import RolloutQueue
from claw.sources.proxy.batcher import Batcher
from claw.sources.proxy.server import ProxyServer, build_app
from claw.sources.proxy.service import Proxy
from claw.sources.proxy.settings import ProxySettings
from claw.users.keys import KeysFile


class ProxySource:
    def __init__(
        self,
        engine: Engine,
        tokenizer,
        run_dir: str | Path,
        name: str = "proxy",
        judges: Judges | None = None,
        teacher: Teacher | None = None,
        fsync: bool = True,
        conversational: bool = True,  # read by build_source: this source's turns are judged
        n: int = 1,  # read by claw.config.validate: a turn is one sample; groups come from `X-Group-Id`
        **settings: Any,
    ) -> None:
        """`settings`: the fields of `ProxySettings` (claw/sources/proxy/settings.py, their defaults); a key that
        names none of them is refused with a TypeError that names it."""
        self.name = name
        self.run_dir = Path(run_dir)
        s = ProxySettings.from_keys(settings)
        self.proxy_api_key = s.api_key
        self.batcher = Batcher(
            engine,
            tokenizer,
            max_batch_size=s.max_batch_size,
            window_s=s.batch_window_s,
            max_wait_s=s.max_wait_s,
            max_waiting=s.max_waiting,
        )
        self.proxy = Proxy(
            engine, tokenizer, self.run_dir, s, self.batcher, judges=judges, teacher=teacher, fsync=fsync
        )
        self.server = ProxyServer(
            build_app(
                self.proxy,
                api_key=s.api_key,
                max_body_bytes=s.max_body_bytes,
                host=s.host,
                allowed_hosts=list(s.allowed_hosts or ()),
                allowed_origins=list(s.allowed_origins or ()),
                keys=None if s.keys_file is None else KeysFile(s.keys_file),
            ),
            host=s.host,
            port=s.port,
            keyed=bool(s.api_key or s.keys_file),
        )
        self.error: BaseException | None = None
        self.exhausted = False  # live traffic never runs out
        self._started = False

    @property
    def url(self) -> str:
        return self.server.url

    def start(self, queue: RolloutQueue, resume_from: int = 0) -> None:
        """Serve. `resume_from` is unused: the proxy recovers from its own log (`proxy.jsonl`)."""
        if self._started:
            return
        self._started = True
        self.proxy.turns.queue = queue
        self.batcher.start()
        self.server.start()
        (self.run_dir / "proxy.json").write_text(
            json.dumps({"base_url": self.url, "model": self.proxy.settings.model_name})
        )
        print(
            f"[claw] proxy serving at {self.url} (model {self.proxy.settings.model_name!r}); "
            f"turns -> {self.run_dir / 'proxy.jsonl'}",
            flush=True,
        )

    def serve_admin(self, rollback) -> None:
        """Answer `POST /admin/rollback` with `rollback(to_version) -> (outcome, message)` (train.py passes the
        guard's claw.guard.state.request_rollback for this run; without it the endpoint answers 404)."""
        self.server.app.state.claw["rollback"] = rollback

    def serve_canary(self, router) -> None:
        """Route new sessions by the guard's canary (claw/guard/canary.py `CanaryTraffic`, a
        claw/sources/proxy/canary.py `CanaryRouter`) and report their judged rewards to it."""
        self.proxy.turns.canary = router

    def run_in_loop(self, coro, timeout: float | None = None):
        """Run a coroutine in the server's loop (where session state lives) from another thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.server.loop).result(timeout)

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        self.server.stop()
        self.batcher.stop()
        self.proxy.turns.close()
