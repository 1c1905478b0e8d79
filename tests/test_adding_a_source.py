"""The example of docs/architecture.md "Adding a source" runs as written: its module and its yaml, copied out of
the page, make a source that `build_source` builds from a composed config and that fills a batch.

Also pins the capability protocols of claw/rollout/source.py on the shipped sources: what each one can do besides
producing samples is what `isinstance` says it can."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from claw.engine import HFEngine
from claw.rollout.queue import RolloutQueue
from claw.rollout.source import Evaluates, ServesAdmin, ServesCanary, Source
from claw.sources.build import build_source
from tests.conftest import make_cfg

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"
FENCE = re.compile(r"```(?:python|yaml)\n# (?P<path>\S+)\n(?P<body>.*?)```", re.DOTALL)


def section(text: str, heading: str) -> str:
    """The Markdown section under `## heading`, up to the next heading of its level."""
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def example_files() -> dict[str, str]:
    """Each fenced block of the section whose first line names a path (`# my_sources/echo.py`): path -> text."""
    return {
        m["path"]: f"# {m['path']}\n{m['body']}" for m in FENCE.finditer(section(PAGE.read_text(), "Adding a source"))
    }


@pytest.fixture
def echo_example(tmp_path, monkeypatch):
    """The page's module importable and its yaml on Hydra's search path, as if they were in the repository."""
    files = example_files()
    assert set(files) == {"my_sources/echo.py", "conf/source/echo.yaml"}, "the page names one module and one yaml"
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield f"hydra.searchpath=[file://{tmp_path / 'conf'}]"
    for name in [m for m in sys.modules if m == "my_sources" or m.startswith("my_sources.")]:
        del sys.modules[name]


def test_the_documented_source_builds_from_its_yaml_and_fills_a_batch(echo_example, tiny_policy, tmp_path):
    cfg = make_cfg(["source=echo", "mode=rl", "algo=grpo", "model=tiny", echo_example], tmp_path / "run")
    engine = HFEngine(tiny_policy, seed=0)
    source = build_source(cfg, tiny_policy, engine)
    assert isinstance(source, Source) and isinstance(source, Evaluates)
    assert not isinstance(source, ServesAdmin) and not isinstance(source, ServesCanary)
    queue = RolloutQueue(tmp_path / "samples.jsonl", max_size=16, fsync=False)
    source.start(queue)
    try:
        taken = queue.take(batch_size=8, policy_version=0, timeout=120)
    finally:
        source.stop()
        queue.close()
    assert source.error is None
    assert taken is not None and len(taken.samples) == 8
    assert {s.source for s in taken.samples} == {"echo"} and {s.group_size for s in taken.samples} == {4}
    assert len({s.group_id for s in taken.samples}) == 2  # two whole groups of one prompt each
    assert all(s.reward in (0.0, 1.0) and s.info["word"] for s in taken.samples)
    result = source.evaluate()
    assert result.n == 4 and 0.0 <= result.accuracy <= 1.0


def test_the_documented_source_refuses_a_teacher(echo_example, tiny_policy, tmp_path):
    """mode=combine builds OPD's teacher; the example says it has no hints instead of ignoring it."""
    cfg = make_cfg(["source=echo", "mode=combine", "algo=reinforce", "model=tiny", "source.n=1", echo_example])
    from hydra.errors import InstantiationException

    with pytest.raises((ValueError, InstantiationException), match="use mode=rl"):  # as built, or wrapped by Hydra
        build_source(cfg, tiny_policy, HFEngine(tiny_policy, seed=0))


def test_the_shipped_sources_declare_what_they_can_do():
    """The dataset source evaluates; the simulated users evaluate and reach the guard through their proxy."""
    from claw.sources.dataset import DatasetSource
    from claw.sources.proxy.source import ProxySource
    from claw.sources.simulated_user import SimulatedUserSource

    def capabilities(cls) -> set[str]:
        return {p.__name__ for p in (Evaluates, ServesAdmin, ServesCanary) if issubclass(cls, p)}

    assert capabilities(DatasetSource) == {"Evaluates"}
    assert capabilities(SimulatedUserSource) == {"Evaluates", "ServesAdmin", "ServesCanary"}
    assert capabilities(ProxySource) == {"ServesAdmin", "ServesCanary"}  # live traffic has no held-out set
