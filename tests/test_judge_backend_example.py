"""The example of docs/judges.md#adding-a-judge-backend, run as written there: its module and its yaml are read out
of the docs, the judges are built from a composed config, and they score and hint turns with it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from claw.config import compose_config
from claw.judge.backends import Voter
from claw.judge.build import build_judges
from claw.judge.turn import Turn

DOCS = Path(__file__).resolve().parents[1] / "docs" / "judges.md"
SECTION = "## Adding a judge backend"
# A fenced block whose first line names the file it is: "# my_judges/thumbs.py", "# conf/judge/thumbs.yaml".
_FILE_BLOCK = re.compile(r"```(?:python|yaml)\n# (?P<path>[\w./-]+)\n(?P<body>.*?)```", re.DOTALL)


def example_files() -> dict[str, str]:
    """The files the section shows, by their path relative to the repository root."""
    text = DOCS.read_text()
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ", len(SECTION))]
    return {m.group("path"): m.group("body") for m in _FILE_BLOCK.finditer(section)}


def turn(reply: str) -> Turn:
    return Turn(
        messages=[{"role": "user", "content": "Summarise the article."}],
        response_text="The article argues, at length, that …",
        next_state=[{"role": "user", "content": reply}],
    )


@pytest.fixture
def thumbs(tmp_path, monkeypatch):
    """The judges of `judge=thumbs`, built from the docs' module and yaml written out under tmp_path."""
    files = example_files()
    assert set(files) == {"my_judges/thumbs.py", "conf/judge/thumbs.yaml"}
    for path, body in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = compose_config([f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "judge=thumbs"])
    return build_judges(cfg.judge)


def test_the_docs_backend_builds_from_its_yaml_alone(thumbs):
    assert type(thumbs.backend).__name__ == "ThumbsBackend" and isinstance(thumbs.backend, Voter)
    assert (thumbs.backend.up, thumbs.backend.down) == ("👍", "👎")  # the constructor's arguments, from the yaml


def test_the_docs_backend_scores_and_hints_a_turn(thumbs):
    down = turn("👎 too long, three lines at most")
    verdict = asyncio.run(thumbs.prm.judge(down))
    assert (verdict.score, verdict.reward, verdict.votes, verdict.error) == (-1, -1.0, [-1], None)
    hinted = asyncio.run(thumbs.hint.extract(down))
    assert hinted.accepted and hinted.hint == "too long, three lines at most"
    up = turn("👍 thanks")
    assert asyncio.run(thumbs.prm.judge(up)).reward == 1.0
    assert not asyncio.run(thumbs.hint.extract(up)).accepted
    assert asyncio.run(thumbs.prm.judge(turn("and in French?"))).reward is None  # no thumbs: no signal
