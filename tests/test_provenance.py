"""Every run says what its numbers came from: the commit (and a hash of uncommitted changes), the date, the engine
and the overrides given — in provenance.json at launch and in summary.json at the end; a resumed run keeps the
overrides it was launched with."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from claw.provenance import code_version, provenance
from tests.conftest import TINY

ROOT = Path(__file__).resolve().parents[1]


def test_the_code_version_is_the_checkouts_head():
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    version = code_version()
    assert version["commit"] == head
    diff = subprocess.run(["git", "diff", "HEAD", "--", "."], cwd=ROOT, capture_output=True, text=True).stdout
    assert version["dirty"] == bool(diff) and (version["diff_sha1"] is not None) == bool(diff)
    p = provenance("hf", ["seed=1", "mode=rl"])
    assert p["engine"] == "hf" and p["overrides"] == ["seed=1", "mode=rl"] and p["date"].startswith("20")


def test_a_run_records_its_provenance_and_a_resumed_run_keeps_its_launch_overrides(tmp_path):
    run_dir = tmp_path / "run"
    base = [sys.executable, "train.py", *(o for o in TINY if not o.startswith("steps=")), "engine=hf"]
    first = [*base, "steps=1", "optim.lr=2e-5", f"run_dir={run_dir}"]
    subprocess.run(first, cwd=ROOT, check=True, capture_output=True, timeout=600)
    launched = json.loads((run_dir / "provenance.json").read_text())
    assert "optim.lr=2e-5" in launched["overrides"] and launched["engine"] == "hf"
    assert json.loads((run_dir / "summary.json").read_text())["provenance"] == launched
    subprocess.run([sys.executable, "train.py", f"resume={run_dir}", "steps=2"], cwd=ROOT, check=True,
                   capture_output=True, timeout=600)  # fmt: skip
    resumed = json.loads((run_dir / "summary.json").read_text())["provenance"]
    assert "optim.lr=2e-5" in resumed["overrides"] and "steps=2" in resumed["overrides"]
    assert not any(o.startswith("resume=") for o in resumed["overrides"])
