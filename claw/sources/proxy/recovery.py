"""Restart: rebuild the turn book's state (claw/sources/proxy/turns.py) from its turn log (`proxy.jsonl`) and
the sample store.

Turns with a next state but no sample (never judged, or judged with every judge call failing) are judged
again; a sample queued just before a kill gets its missing `queued` outcome; open sessions come back, so
a client that continues its conversation after the crash links up.
"""

from __future__ import annotations

from claw.judge.turn import Turn
from claw.sources.proxy.outcomes import RECOVERABLE, REOPENABLE
from claw.sources.proxy.turns import TurnBook


def recover(book: TurnBook) -> dict[str, int]:
    """Rebuild `book` from its log after a restart (call inside the server loop, once the queue is set).
    Turns with a next state and no sample — never judged, or judged with every judge call failing — are judged
    again; open sessions return.

    This still reads all of `proxy.jsonl` and all of `samples.jsonl` (the trainer's restart reads only the
    store's tail: claw/rollout/queue.py). A snapshot of this fold cut at a log offset is not yet safe to
    take: a turn with a final outcome (`superseded`, `retried`) can still have its sample in the store
    (the sample went in while the later request closed the turn; the store check below turns it into
    `queued`), and a judgement in flight when the snapshot is cut can still put one; ended session ids
    must be kept too (a later turn of such an id is not reopened). A snapshot must carry those, with
    the store offset it has checked up to, before the whole reads can go."""
    stored = {r.get("sample_id") for r in book.queue.store.read()} if book.queue is not None else set()
    turns, ended = replay(book.log.read())
    rejudge = 0
    for turn in turns.values():
        if turn.turn_id in stored and turn.outcome != "queued":  # killed between queuing the sample and its verdict
            turn.judged = True
            turn.outcome = None
            book.outcomes.record(turn, "queued", recovered=True)
        elif turn.outcome is not None and turn.outcome not in RECOVERABLE:
            turn.judged = True
        elif turn.next_state is not None or (turn.feedback and turn.session_id in ended):
            rejudge += 1
            book.start_judging(turn)
    reopened = 0
    for turn in sorted(turns.values(), key=lambda t: t.created):
        if turn.session_id in ended:
            continue
        session = book.sessions.live.get(turn.session_id) or book.sessions.get_or_create(turn.session_id)
        reopened += not session.turns
        book.sessions.add_turn(session, turn)
    book.counts["recovered_turns"] += len(turns)
    return {"turns": len(turns), "rejudged": rejudge, "sessions_reopened": reopened}


def replay(records) -> tuple[dict[str, Turn], set[str]]:
    """The log folded: every served main turn with its live fields (next state, feedback, latest outcome), and
    the ids of the sessions that ended."""
    turns: dict[str, Turn] = {}
    ended: set[str] = set()
    for r in records:
        kind = r.get("kind")
        if kind == "turn":
            turns[r["turn_id"]] = Turn.from_json(r)
        elif kind == "next_state" and r["turn_id"] in turns:
            turns[r["turn_id"]].next_state = r["messages"]
        elif kind == "feedback" and r["turn_id"] in turns:
            turn = turns[r["turn_id"]]
            turn.feedback = {"reward": r.get("reward"), "correction": r.get("correction")}
            if turn.outcome in REOPENABLE:  # accepted after a no-signal verdict: the feedback is judged afresh
                turn.outcome = None
        elif kind == "verdict" and r["turn_id"] in turns:
            turns[r["turn_id"]].outcome = r["reason"]  # the later record wins (a re-judged turn)
        elif kind == "end":
            ended.add(r["session_id"])
    return turns, ended
