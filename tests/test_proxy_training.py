"""`python train.py source=proxy`: serving an OpenAI client while training from its conversations,
and a SIGKILL under traffic followed by a restart that keeps every accepted turn."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import openai

from tests.conftest import ROOT, make_cfg

PROXY = [
    "model=tiny",
    "logger=none",
    "source=proxy",
    "judge=rule",
    "algo=reinforce",
    "mode=combine",
    "source.port=0",
    "source.default_max_tokens=8",
    "batch_size=4",
    "optim.micro_batch_size=4",
    "max_staleness=1000",
]


def converse(
    base_url: str, session: str, turns: int, received: list[str], stop: threading.Event | None = None
) -> None:
    """One user: asks, then answers each reply with a correction or thanks (cues the rule judge reads)."""
    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=2, timeout=120)
    messages = [{"role": "user", "content": f"Session {session}: tell me a fact."}]
    for k in range(turns):
        if stop is not None and stop.is_set():
            return
        r = client.chat.completions.create(
            model="m", messages=messages, temperature=0.9, extra_headers={"X-Session-Id": session}
        )
        received.append(r.model_extra["claw"]["turn_id"])
        reply = "Thanks, great!" if k % 2 else "No, that's wrong, give me a shorter answer instead."
        messages += [
            {"role": "assistant", "content": r.choices[0].message.content},
            {"role": "user", "content": reply},
        ]


def wait_url(run_dir, timeout=120.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = run_dir / "proxy.json"
        if path.exists():
            return json.loads(path.read_text())["base_url"]
        time.sleep(0.2)
    raise TimeoutError("the proxy never wrote proxy.json")


def test_train_from_live_conversations(tmp_path):
    from train import run

    cfg = make_cfg([*PROXY, "steps=2"], tmp_path)
    result: dict = {}
    trainer = threading.Thread(target=lambda: result.update(run(cfg)), daemon=True)
    trainer.start()
    url = wait_url(tmp_path)
    received: list[str] = []
    stop = threading.Event()
    errors: list[BaseException] = []
    users = [
        threading.Thread(target=_checked, args=(errors, converse, url, f"u{i}", 8, received, stop)) for i in range(4)
    ]
    for u in users:
        u.start()
    trainer.join(timeout=300)
    stop.set()
    for u in users:
        u.join(timeout=120)
    assert result.get("steps") == 2, result
    assert not errors, errors  # a client error is a failure, except the server going away once training ended
    ledger = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    trained = [sid for r in ledger for sid in r["trained"]]
    assert len(trained) >= 8 and set(trained) <= set(received)  # every trained sample is a turn a client received
    stored = [json.loads(line)["sample_id"] for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert (
        trained == stored[: len(trained)]
    )  # trained in arrival order, none skipped (a half-full batch loses nothing)


def test_sigkill_under_traffic_then_restart_keeps_every_accepted_turn(tmp_path):
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    args = [sys.executable, "train.py", *PROXY, "steps=1000", f"run_dir={tmp_path}"]
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = wait_url(tmp_path)
        received: list[str] = []
        stop = threading.Event()
        users = [
            threading.Thread(target=lambda i=i: _quiet(converse, url, f"k{i}", 50, received, stop)) for i in range(4)
        ]
        for u in users:
            u.start()
        deadline = time.monotonic() + 120
        while len(received) < 12 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)  # under traffic: requests are in flight
        proc.wait(timeout=30)
        stop.set()
        for u in users:
            u.join(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(received) >= 12
    stored = {
        json.loads(line)["turn_id"]
        for line in (tmp_path / "proxy.jsonl").read_text().splitlines()
        if '"kind":"turn"' in line
    }
    assert set(received) <= stored  # every reply a client got was on disk first

    # restart: the same run directory; turns that had a next state but no sample are judged again
    (tmp_path / "proxy.json").unlink()
    proc = subprocess.Popen(
        [sys.executable, "train.py", f"resume={tmp_path}", "steps=1000"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = wait_url(tmp_path)
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=2, timeout=60)
        assert client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "back?"}], max_tokens=3
        ).choices
        records = lambda: [
            json.loads(line) for line in (tmp_path / "proxy.jsonl").read_text().splitlines() if line.strip()
        ]  # noqa: E731
        with_next = {r["turn_id"] for r in records() if r["kind"] == "next_state"}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            verdicts = {r["turn_id"] for r in records() if r["kind"] == "verdict"}
            if with_next <= verdicts:
                break
            time.sleep(0.2)
        missing = with_next - verdicts
        assert not missing, (
            "turns with a next state never judged: "
            f"{[r for r in records() if r.get('turn_id') in missing or r['kind'] == 'error']}"
        )
        samples = {json.loads(line)["sample_id"] for line in (tmp_path / "samples.jsonl").read_text().splitlines()}
        queued = {r["turn_id"] for r in records() if r["kind"] == "verdict" and r["sample"]}
        assert queued <= samples  # a verdict that says "queued" has its sample in the store
    finally:
        proc.kill()
        proc.wait(timeout=30)


def _checked(errors: list[BaseException], fn, *args):
    """Run one user; keep any error but the ones a server shutting down at the end of training gives."""
    try:
        fn(*args)
    except (openai.APIConnectionError, openai.APITimeoutError):  # the run ended and its server stopped
        pass
    except openai.APIStatusError as e:
        if e.status_code != 503:  # 503 shutting_down: the run ended under this request
            errors.append(e)
    except Exception as e:
        errors.append(e)


def _quiet(fn, *args):
    try:
        fn(*args)
    except Exception:  # the server was killed under this client: expected
        pass
