"""The HTTP face of the proxy: FastAPI routes, body limits, error bodies, and a uvicorn thread.

Endpoints
- `POST /v1/chat/completions`  OpenAI chat completions, non-streaming and SSE streaming
- `GET  /v1/models`            the served policy
- `GET  /healthz`              liveness (no key needed)
- `GET  /metrics`              Prometheus text: requests, batching, latency, sessions, verdicts, samples
- `POST /v1/feedback`          {session_id, turn_id?, reward?, correction?}: explicit feedback on a turn
- `POST /v1/sessions/{id}/end` {messages?}: end a session; `messages` are its last turn's next state
- `POST /admin/rollback`       {to_version}: a guarded run serves that promoted version again (as
                               `python -m claw.rollback`); 202 requested, 404 no guard or not a kept
                               version, 409 already served. Needs the proxy's own key: a proxy started
                               without source.api_key answers 403 (anyone on the machine could roll it
                               back), and so does a request with a user's key (source.keys_file).

Before any route, every request but `/healthz` passes claw/sources/proxy/gate.py: a `Host` naming this server
(else 421), no foreign `Origin` (else 403), the API key when there is one (401), a JSON body on POST (415).

Every error is a JSON body in OpenAI's format with a 4xx (or 503 + Retry-After while the engine
cannot serve); an unexpected exception is a 500 in the same format whose message is only "internal error" and a
request id (the traceback is logged under that id), and the connection stays open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from claw.sources.proxy import protocol as P
from claw.sources.proxy.gate import Gate, is_loopback
from claw.sources.proxy.service import Proxy
from claw.sources.proxy.telemetry import CONTENT_TYPE
from claw.users.keys import KeysFile

log = logging.getLogger(__name__)

# Bodies past this are decoded and checked in a worker thread: json.loads and the checks take ~0.1 s per MB on the
# event loop, which serves every other request; under it the thread hop costs more than the work.
OFF_LOOP_BYTES = 64 << 10
# Stopping (ProxyServer.stop): the listener closes at once; responses in flight get STOP_GRACE_S to finish, then are
# cancelled (their turns stay in proxy.jsonl); judgements in flight get DRAIN_S more: a stop takes at most their sum.
STOP_GRACE_S = 5
DRAIN_S = 10.0


def error_response(err: P.APIError) -> JSONResponse:
    return JSONResponse(err.body(), status_code=err.status, headers=err.headers)


def unexpected(request: Request) -> JSONResponse:
    """The 500 for an exception no route meant: its traceback is logged under a request id, the client gets the id."""
    request_id = "req-" + uuid.uuid4().hex[:16]
    log.exception("internal error %s serving %s %s", request_id, request.method, request.scope.get("path"))
    err = P.internal_error(request_id)
    return JSONResponse(err.body(), status_code=err.status, headers={"X-Request-Id": request_id})


async def read_json(
    request: Request, max_body_bytes: int, empty: Any = None, then: Callable[[Any], Any] | None = None
) -> Any:
    """The decoded JSON body (413 over `max_body_bytes`, 400 when it is not JSON this server can hold), passed through
    `then` (a route's validation) when given; `empty` stands for a blank body where one is allowed. A large body is
    decoded and validated in a worker thread (`OFF_LOOP_BYTES`)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
        raise P.APIError(
            413, f"request body of {declared} bytes exceeds the limit of {max_body_bytes}", None, "body_too_large"
        )
    body = bytearray()
    async for part in request.stream():
        body.extend(part)
        if len(body) > max_body_bytes:
            raise P.APIError(413, f"request body exceeds the limit of {max_body_bytes} bytes", None, "body_too_large")
    if not body.strip():
        if empty is not None:
            return empty if then is None else then(empty)
        raise P.bad("the request body is empty; send a JSON object", None, "invalid_json")

    def decode(raw: bytes) -> Any:
        value = P.decode_body(raw)
        return value if then is None else then(value)

    if len(body) > OFF_LOOP_BYTES:
        return await asyncio.to_thread(decode, bytes(body))
    return decode(bytes(body))


# What an admin outcome (claw.guard.state.request_rollback) is over HTTP.
ROLLBACK_STATUS = {"requested": 202, "already_served": 409, "unknown_version": 404, "no_guard": 404}


def build_app(
    proxy: Proxy,
    api_key: str | None = None,
    max_body_bytes: int = 4 << 20,
    reap_every_s: float = 5.0,
    host: str = "127.0.0.1",
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    keys: KeysFile | None = None,
) -> FastAPI:
    """The proxy's app: the gate before every route, OpenAI-format errors, and the routes of the module docstring."""
    state: dict[str, Any] = {"started": time.time()}
    app = FastAPI(
        title="claw proxy",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan(proxy, state, reap_every_s),
    )
    app.state.claw = state
    add_gate_and_errors(app, Gate(api_key, host, allowed_hosts, allowed_origins, keys))
    add_status_routes(app, proxy, state)
    add_turn_routes(app, proxy, max_body_bytes)
    add_admin_routes(app, state, api_key, max_body_bytes)
    return app


def lifespan(proxy: Proxy, state: dict[str, Any], reap_every_s: float):
    """On start: recover the turn book from the log and reap idle sessions every few seconds; on stop: drain."""

    @contextlib.asynccontextmanager
    async def span(app: FastAPI):
        async def reaper():
            while True:
                await asyncio.sleep(min(reap_every_s, proxy.settings.idle_timeout_s / 2))
                proxy.reap_idle()

        state["loop"] = asyncio.get_running_loop()
        state["recovered"] = proxy.recover()
        reaping = asyncio.get_running_loop().create_task(reaper())
        yield
        reaping.cancel()
        await proxy.drain(timeout=DRAIN_S)

    return span


def add_gate_and_errors(app: FastAPI, gate: Gate) -> None:
    """The gate (claw/sources/proxy/gate.py) before every route; every error as an OpenAI error body."""

    @app.middleware("http")
    async def guard(request: Request, call_next):
        refused = gate.refusal(request)
        if refused is not None:
            return error_response(refused)
        try:
            return await call_next(request)
        except Exception:  # answered here, not re-raised: Starlette's own 500 re-raises, and uvicorn then drops the
            return unexpected(request)  # keep-alive connection

    @app.exception_handler(P.APIError)
    async def _api_error(request: Request, err: P.APIError):
        return error_response(err)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, err: StarletteHTTPException):
        return error_response(
            P.APIError(err.status_code, str(err.detail), None, "not_found" if err.status_code == 404 else None)
        )

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, err: RequestValidationError):
        return error_response(P.bad(f"invalid request: {err.errors()}"))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, err: Exception):  # only what escapes `guard` itself
        return unexpected(request)


def add_status_routes(app: FastAPI, proxy: Proxy, state: dict[str, Any]) -> None:
    @app.get("/healthz")
    async def healthz():
        return {
            "status": "ok",
            "policy_version": proxy.engine.version,
            "uptime_s": round(time.time() - state["started"], 1),
        }

    @app.get("/v1/models")
    async def models():
        name = proxy.settings.model_name
        return {
            "object": "list",
            "data": [{"id": name, "object": "model", "created": int(state["started"]), "owned_by": "claw"}],
        }

    @app.get("/metrics")
    async def metrics():
        return Response(proxy.telemetry.expose(proxy), media_type=CONTENT_TYPE)  # claw/sources/proxy/telemetry.py


def add_turn_routes(app: FastAPI, proxy: Proxy, max_body_bytes: int) -> None:
    """A turn's routes: serving it, explicit feedback on it, and the end of its session."""

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        allow_top_p = proxy.settings.ignore_top_p
        req = await read_json(request, max_body_bytes, then=lambda body: P.parse_chat_request(body, allow_top_p))
        headers = {k.lower(): v for k, v in request.headers.items()}
        result, out_headers = await proxy.chat(req, headers, request.scope.get("claw.user"))
        if isinstance(result, dict):
            return JSONResponse(result, headers=out_headers)
        return StreamingResponse(
            result, media_type="text/event-stream", headers={**out_headers, "Cache-Control": "no-cache"}
        )

    @app.post("/v1/feedback")
    async def feedback(request: Request):
        said = await read_json(request, max_body_bytes, then=P.parse_feedback)
        user = request.scope.get("claw.user")
        return proxy.feedback(said.session_id, said.turn_id, said.reward, said.correction, user)

    @app.post("/v1/sessions/{session_id}/end")
    async def end(session_id: str, request: Request):
        messages = await read_json(request, max_body_bytes, empty={}, then=P.parse_session_end)
        if not proxy.end_session(session_id, "end_call", messages, request.scope.get("claw.user")):
            raise P.APIError(404, f"no open session {session_id!r}", "session_id", "not_found")
        return {"session_id": session_id, "status": "ended"}


def add_admin_routes(app: FastAPI, state: dict[str, Any], api_key: str | None, max_body_bytes: int) -> None:
    @app.post("/admin/rollback")
    async def rollback(request: Request):
        if not api_key:  # the middleware checked the key when there is one
            raise P.APIError(
                403,
                "admin endpoints need an API key: start the proxy with source.api_key set",
                None,
                "no_api_key",
                "permission_error",
            )
        if not request.scope.get("claw.admin"):
            raise P.APIError(
                403,
                "admin endpoints need the proxy's own key (source.api_key), not a user's key",
                None,
                "not_admin",
                "permission_error",
            )
        version = await read_json(request, max_body_bytes, then=P.parse_rollback)
        handler = state.get("rollback")  # set by ProxySource.serve_admin when the run has a guard
        if handler is None:
            raise P.APIError(
                404,
                "this run has no guard (guard=none): nothing to roll back to; train with guard=ope",
                "to_version",
                "no_guard",
            )
        outcome, message = await asyncio.to_thread(handler, version)
        status = ROLLBACK_STATUS[outcome]
        if status >= 400:
            raise P.APIError(status, message, "to_version", outcome)
        return JSONResponse({"status": outcome, "to_version": version, "message": message}, status_code=status)


class ProxyServer:
    """uvicorn in a daemon thread, on a socket bound before the thread starts (so a bad address fails here)."""

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0, keyed: bool = False) -> None:
        """`keyed`: every request but /healthz needs a key (source.api_key or source.keys_file)."""
        if not is_loopback(host) and not keyed:
            raise ValueError(
                f"source.host={host} exposes the proxy beyond this machine: set source.api_key or source.keys_file "
                "(clients send 'Authorization: Bearer <key>')"
            )
        self.app, self.host = app, host
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(
            app, log_level="warning", timeout_keep_alive=30, lifespan="on", timeout_graceful_shutdown=STOP_GRACE_S
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, name="claw-proxy-http", daemon=True
        )

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def start(self, timeout: float = 30.0) -> None:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the proxy did not start on {self.host}:{self.port}")
            time.sleep(0.02)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The server's event loop: where session state lives (run coroutines there with run_coroutine_threadsafe)."""
        return self.app.state.claw["loop"]

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=STOP_GRACE_S + DRAIN_S + 5)
        self.sock.close()
