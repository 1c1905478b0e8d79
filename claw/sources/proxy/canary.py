"""The proxy's side of canary traffic: which weights serve a request, and where its judged reward goes.

The guard (claw/guard/canary.py `CanaryTraffic`) owns the canary: it loads the candidate into the
engine's second weight set (engine=hf) and hands the proxy a `CanaryRouter` (`ProxySource.serve_canary`).
For every request the proxy asks the router for the session's **route**, `(canary id, arm)` with arm
`canary` (the candidate's weights) or `served` (the promoted weights), or None (no canary running, or a
session that began before it: those are served as usual and are no evidence either way). Only a
session's first main turn can enrol it, so a conversation never switches weights under a running
canary. The turn records its arm and canary id (`Turn.arm`, `.canary`; the sample's
`info["arm"]`), and its policy_version is the version of the weights that decoded it (the candidate's
for canary turns). When a turn is judged, its reward goes back to the router (`observe`) — the guard
compares the arms' rewards while the trainer waits, before any of them is trained.
"""

from __future__ import annotations

from typing import Protocol

from claw.engine.base import Generation

Route = tuple[str, str]  # (canary id, arm): arm is "canary" (the candidate's weights) or "served"


class CanaryRouter(Protocol):
    running: bool  # a canary is running (its trainer waits for judged turns)

    def route(self, session_id: str, new: bool) -> Route | None:
        """The session's route while a canary runs; `new` (its first main turn) enrols it in an arm."""
        ...

    def observe(self, canary_id: str, arm: str, reward: float) -> None:
        """A judged turn of `arm` (ignored unless `canary_id` is the canary running now)."""
        ...


def turn_route(route: Route | None, gen: Generation) -> Route | None:
    """The route a served turn records: a row routed to the candidate that the engine decoded with the
    served weights (the canary ended between routing and decoding) belongs to neither arm."""
    if route is not None and route[1] == "canary" and not gen.canary:
        return None
    return route
