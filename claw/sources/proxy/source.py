"""`source=proxy`: an OpenAI-compatible server in the training process; live turns become samples.

python train.py source=proxy mode=combine judge=rule algo=reinforce
then point any OpenAI client at http://127.0.0.1:8000/v1 (the URL is also written to <run dir>/proxy.json).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

from claw.engine.base import Engine
from claw.judge.build import Judges
from claw.judge.teacher import Teacher
from claw.rollout.queue import RolloutQueue
from claw.sources.proxy.batcher import Batcher
from claw.sources.proxy.server import ProxyServer, build_app
from claw.sources.proxy.service import Proxy, ProxySettings


class ProxySource:
    def __init__(
        self,
        engine: Engine,
        tokenizer,
        run_dir: str | Path,
        name: str = "proxy",
        mode: str = "combine",
        judges: Judges | None = None,
        teacher: Teacher | None = None,
        topk: int = 0,
        host: str = "127.0.0.1",
        port: int = 8000,
        api_key: str | None = None,
        model_name: str = "claw-policy",
        min_temperature: float = 0.2,
        max_temperature: float = 1.5,
        default_max_tokens: int = 256,
        max_tokens_cap: int = 1024,
        max_context_tokens: int = 2048,
        ignore_top_p: bool = False,
        idle_timeout_s: float = 600.0,
        max_live_sessions: int = 10_000,
        max_open_turns: int = 64,
        keep_closed_turns: int = 8,
        judge_retries: int = 3,
        judge_retry_backoff_s: float = 5.0,
        max_batch_size: int = 32,
        batch_window_s: float = 0.02,
        max_wait_s: float = 120.0,
        max_waiting: int = 256,
        max_body_bytes: int = 4 << 20,
        allowed_hosts: Sequence[str] = (),
        allowed_origins: Sequence[str] = (),
        fsync: bool = True,
        **_: object,
    ) -> None:
        self.name = name
        self.run_dir = Path(run_dir)
        self.proxy_api_key = api_key
        settings = ProxySettings(
            model_name=model_name, mode=mode, min_temperature=min_temperature, max_temperature=max_temperature,
            default_max_tokens=default_max_tokens, max_tokens_cap=max_tokens_cap,
            max_context_tokens=max_context_tokens, ignore_top_p=ignore_top_p, idle_timeout_s=idle_timeout_s,
            max_live_sessions=max_live_sessions, max_open_turns=max_open_turns,
            keep_closed_turns=keep_closed_turns, topk=topk,
            judge_retries=judge_retries, judge_retry_backoff_s=judge_retry_backoff_s,
        )  # fmt: skip
        self.batcher = Batcher(
            engine,
            tokenizer,
            max_batch_size=max_batch_size,
            window_s=batch_window_s,
            max_wait_s=max_wait_s,
            max_waiting=max_waiting,
        )
        self.proxy = Proxy(
            engine, tokenizer, self.run_dir, settings, self.batcher, judges=judges, teacher=teacher, fsync=fsync
        )
        self.server = ProxyServer(
            build_app(
                self.proxy,
                api_key=api_key,
                max_body_bytes=max_body_bytes,
                host=host,
                allowed_hosts=list(allowed_hosts or ()),
                allowed_origins=list(allowed_origins or ()),
            ),
            host=host,
            port=port,
            api_key=api_key,
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
        self.proxy.queue = queue
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
        self.proxy.canary = router

    def run_in_loop(self, coro, timeout: float | None = None):
        """Run a coroutine in the server's loop (where session state lives) from another thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.server.loop).result(timeout)

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        self.server.stop()
        self.batcher.stop()
        self.proxy._queue_thread.shutdown(wait=False, cancel_futures=True)

    def evaluate(self):
        return None  # live traffic has no held-out set
