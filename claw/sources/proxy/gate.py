"""What a request must pass before any route reads it. In order, for every path but `/healthz`:

1. `Host` names this server: a loopback name or address, the address the client connected to, the bound host, or
   one of `source.allowed_hosts` ("*": any). Else 421: a DNS-rebinding page reaches 127.0.0.1 under its own name,
   and its browser then treats the proxy as that page's own origin.
2. An `Origin` header, when there is one, is this server's own (http, a name as in 1, this port) or one of
   `source.allowed_origins` ("*": any). Else 403: a web page's cross-site request. Non-browser clients (the
   `openai` SDK, httpx, curl) send no `Origin`.
3. A key, when the proxy has one: `Authorization: Bearer <key>`, the scheme in any case (RFC 9110 §11.1). 401.
   The key is the proxy's own (`source.api_key`: every route, admin included) or a person's, from the keys file
   (`source.keys_file`, claw/users/keys.py): the request then speaks for that user (`request.scope["claw.user"]`)
   and may not reach the admin routes.
4. A POST with a body declares JSON (`application/json`, or `application/<x>+json`). Else 415: a browser sends
   `text/plain`, form and multipart bodies cross-site without a CORS preflight, so only a JSON type proves the
   preflight happened.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Sequence
from urllib.parse import urlsplit

from starlette.requests import Request

from claw.sources.proxy import protocol as P
from claw.users.keys import KeysFile

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(host: str) -> str:
    """The name a Host header names, without its port: 'LocalHost:8000' -> 'localhost', '[::1]:8000' -> '::1'."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def has_body(request: Request) -> bool:
    length = request.headers.get("content-length", "0").strip()
    return "transfer-encoding" in request.headers or not (length.isdigit() and int(length) == 0)


class Gate:
    def __init__(
        self,
        api_key: str | None = None,
        host: str = "127.0.0.1",
        allowed_hosts: Sequence[str] = (),
        allowed_origins: Sequence[str] = (),
        keys: KeysFile | None = None,
    ) -> None:
        self.api_key, self.keys = api_key, keys
        self.names = {host_name(h) for h in (*LOOPBACK, host, *allowed_hosts)}
        self.any_host = "*" in allowed_hosts
        self.origins = {o.strip().rstrip("/").lower() for o in allowed_origins}

    def serves(self, name: str, request: Request) -> bool:
        """Whether `name` (from Host or Origin) is this server. The address the client connected to counts: no DNS
        name can be rebound to an address literal."""
        local = (request.scope.get("server") or ("",))[0]
        return self.any_host or name in self.names or is_loopback(name) or name == host_name(str(local))

    def own_origin(self, origin: str, request: Request) -> bool:
        if "*" in self.origins or origin.strip().rstrip("/").lower() in self.origins:
            return True
        try:
            parts = urlsplit(origin.strip())
            port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
        except ValueError:
            return False
        ours = (request.scope.get("server") or (None, None))[1]
        return parts.scheme == "http" and port == ours and self.serves(parts.hostname or "", request)

    def identify(self, given: str) -> tuple[bool, str | None] | None:
        """(admin, user) for the `Authorization` header's key, or None when it is no key of ours. The header is
        decoded as latin-1 (any bytes); the proxy's key is compared as bytes in constant time, a person's by its
        hash."""
        scheme, _, token = given.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        if self.api_key and hmac.compare_digest(token.encode(), self.api_key.encode()):
            return True, None
        user = self.keys.user_for(token) if self.keys is not None else None
        return None if user is None else (False, user)

    def refusal(self, request: Request) -> P.APIError | None:
        """The error that refuses `request`, or None when it may reach its route."""
        # liveness, for probes naming any host; the path from the scope (request.url is built from the Host header)
        if request.scope.get("path") == "/healthz":
            return None
        name = host_name(request.headers.get("host", ""))
        if not self.serves(name, request):
            return P.APIError(
                421,
                f"this server does not answer to Host {name[:100]!r}: connect to 127.0.0.1 or localhost, or list "
                "the name in source.allowed_hosts",
                None,
                "misdirected_request",
            )
        origin = request.headers.get("origin")
        if origin is not None and not self.own_origin(origin, request):
            return P.APIError(
                403,
                f"requests from the web page at {origin[:100]!r} are refused: list its origin in "
                "source.allowed_origins to let a browser app call this server",
                None,
                "foreign_origin",
                "permission_error",
            )
        if self.api_key or self.keys is not None:
            identity = self.identify(request.headers.get("authorization", ""))
            if identity is None:
                return P.APIError(
                    401,
                    "missing or wrong API key: send 'Authorization: Bearer <key>'",
                    None,
                    "invalid_api_key",
                    "authentication_error",
                )
            request.scope["claw.admin"], request.scope["claw.user"] = identity
        if request.method == "POST" and has_body(request) and not is_json(request.headers.get("content-type", "")):
            return P.APIError(
                415,
                "the request body must be JSON: send 'Content-Type: application/json'",
                None,
                "unsupported_media_type",
            )
        return None
