"""engine=vllm_server's weight sync against a stand-in for vLLM's dev endpoints over real HTTP: versions
load in order, the newest of those waiting wins, and no reload ever finds its files removed."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import torch

from claw.engine.vllm_server import VLLMServerEngine


class _FakeVLLM(BaseHTTPRequestHandler):
    loads: list[tuple[str, bool]] = []  # (weights_path, its weights were there)
    release = threading.Event()  # reloads block until the test has written every version

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path == "/collective_rpc":
            path = body["kwargs"]["weights_path"]
            self.release.wait(30)  # a reload in flight while the trainer writes every later version
            from pathlib import Path

            self.loads.append((path, (Path(path) / "model.safetensors").is_file()))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def test_reloads_apply_in_version_order_and_never_lose_their_files(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeVLLM)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # stands for the server process
    eng = VLLMServerEngine.__new__(VLLMServerEngine)  # no vLLM process: only the sync path is under test
    eng.dir, eng.proc, eng.version, eng._closed, eng._error, eng.log_file = (
        tmp_path,
        alive,
        0,
        False,
        None,
        tmp_path / "log",
    )
    eng.client = httpx.Client(base_url=f"http://127.0.0.1:{server.server_address[1]}")
    (tmp_path / "v0").mkdir()
    (tmp_path / "v0" / "config.json").write_text("{}")
    eng._init_sync()
    try:

        def trainer():  # the trainer writes v1..v8 while the first reload is still in flight
            for v in range(1, 9):
                eng.load_weights([("w", torch.full((4,), float(v)))], version=v)
                time.sleep(0.05)

        writer = threading.Thread(target=trainer, daemon=True)
        writer.start()
        writer.join(timeout=20)
        assert not writer.is_alive(), "the trainer waited for a reload in flight"  # behaviour, not a timing bound
        _FakeVLLM.release.set()
        eng.wait_synced(timeout=30)
        loaded = [int(p.rsplit("v", 1)[1]) for p, _ in _FakeVLLM.loads]
        assert all(ok for _, ok in _FakeVLLM.loads), f"a reload found its weights removed: {_FakeVLLM.loads}"
        assert loaded == sorted(loaded) and loaded[-1] == 8, f"reload order {loaded}"
        assert eng.version == 8 and eng._error is None
        deadline = time.monotonic() + 10  # the superseded version's files go once the newer load is done
        while sorted(p.name for p in tmp_path.glob("v*")) != ["v0", "v8"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sorted(p.name for p in tmp_path.glob("v*")) == ["v0", "v8"]
    finally:
        eng._written.put(None)
        alive.kill()
        server.shutdown()
