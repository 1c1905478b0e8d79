"""The repository describes the product, and its links lead somewhere.

1. Text that ships (code comments, configs, docs, experiment write-ups and scripts, personas, benchmarks) says what
   the code does and why. It does not narrate how the work was organised: numbered work sessions ("the twentieth
   session"), issue numbers ("issue 17"), who wrote what ("written by a helper"), or guides that are not in the
   repository. Findings are dated by day (2026-12-07) or by commit instead.
2. Every relative link in README.md, docs/*.md and experiments/*/README.md resolves to a file in the repository,
   and a `#fragment` into a Markdown file names one of its headings.

The product has HTTP sessions (`X-Session-Id`, `session_id`, "the first session of a round"), so the session
pattern matches only the phrasings of a work session; `test_patterns_*` pin what it does and does not match.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


SCANNED_TREES = ("claw", "conf", "docs", "personas", "bench")
SCANNED_FILES = ("README.md", "train.py")
SCANNED_GLOBS = ("experiments/*/*.md", "experiments/*/log.md", "experiments/**/*.sh", "experiments/**/*.py")
TEXT_SUFFIXES = {".py", ".yaml", ".yml", ".md", ".txt", ".sh", ".toml", ".cfg", ".ini", ".json", ".jsonl"}

_ORDINAL_WORDS = (
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth "
    "fifteenth sixteenth seventeenth eighteenth nineteenth twentieth thirtieth"
).split()
_ORDINAL = (
    r"(?:(?:twenty[- ]?)?(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)|"
    + "|".join(_ORDINAL_WORDS)
    + r"|\d+(?:st|nd|rd|th))"
)
# "the twentieth session", "(fourth session)", "Sixteenth to eighteenth sessions", "the 5th session's runs" — but not
# the product's "the first session number", "a second session", or "the next round's first session".
WORK_SESSION = re.compile(
    rf"(?<!round's )(?<!round’s )(?<!\ba )\b{_ORDINAL}(?:\s+(?:to|and|or|through)\s+{_ORDINAL})?\s+sessions?\b"
    r"(?![-_ ]?(?:id|ids|number|numbers|key|header|of\b))",
    re.IGNORECASE,
)
# "session 16" as a label for a round of work; not X-Session-Id, session_id, nor "session 3 of 8".
NUMBERED_SESSION = re.compile(r"(?<![-_\w])sessions? \d+\b(?!\s+of\b)(?![-.]\d)", re.IGNORECASE)
FORBIDDEN: dict[str, re.Pattern[str]] = {
    "numbered work session": WORK_SESSION,
    "numbered session": NUMBERED_SESSION,
    "issue number": re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE),
    "who wrote it": re.compile(r"\bhelpers?\b|\bindependent testers?\b", re.IGNORECASE),
    "a guide outside the repository": re.compile(r"DESIGN\.md|openclaw-rl\.md|STYLE\.md"),
}


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def scanned_files() -> list[Path]:
    """Every text file the words test reads (symlinked folders such as conf/sweep followed, each file once)."""
    found: dict[Path, Path] = {}
    for tree in SCANNED_TREES:
        for dirpath, dirnames, filenames in os.walk(ROOT / tree, followlinks=True):
            dirnames[:] = [d for d in dirnames if d != "__pycache__" and not d.startswith(".")]
            for name in filenames:
                path = Path(dirpath) / name
                if path.suffix in TEXT_SUFFIXES:
                    found.setdefault(path.resolve(), path)
    for name in SCANNED_FILES:
        found.setdefault((ROOT / name).resolve(), ROOT / name)
    for pattern in SCANNED_GLOBS:
        for path in ROOT.glob(pattern):
            found.setdefault(path.resolve(), path)
    return sorted(p for p in found.values() if p.is_file())


def forbidden_hits(text: str) -> list[tuple[int, str, str]]:
    """(line number, what, the matched words) for each forbidden phrase in `text`."""
    hits = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in FORBIDDEN.items():
            for match in pattern.finditer(line):
                hits.append((number, what, match.group(0)))
    return hits


# ---- the patterns themselves --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "since the twentieth session the simulated users sample at T = 0.4",
        "(experiments/personal_agent/README.md, eleventh session)",
        "## Sixteenth to eighteenth sessions: a learned reading",
        "the twenty-seventh session measured why",
        "measured in the 5th session",
        "binary credit, the first session",
        "the third session's section below",
        "results of session 16",
        "the shards (issue 14, item 9)",
        "guarded updates (issue #17)",
        "written by a helper who never opened the repository",
        "an independent tester read the lines",
        "see DESIGN.md §4",
        "openclaw-rl.md §2",
    ],
)
def test_patterns_catch_work_organisation(text: str) -> None:
    assert forbidden_hits(text), text


@pytest.mark.parametrize(
    "text",
    [
        "extra_headers={'X-Session-Id': 'my-chat-42'}",
        "X-Session-Id: 42",
        "body = {'session_id': 'abc', 'turn_id': 3}",
        "The first session number a restarted run may use",
        "it goes on at the next round's first session, so",
        "a headerless retry of a first message is a new session",
        "rounds of 8 sessions on one policy version",
        "session 3 of 8 in the round",
        "sim-0-12 is the twelfth conversation",
        "the first session id it sees",
        "a second session with the same history is a retry",
        "POST /v1/sessions/{id}/end",
    ],
)
def test_patterns_leave_the_product_alone(text: str) -> None:
    assert not forbidden_hits(text), forbidden_hits(text)


# ---- the repository -----------------------------------------------------------------------------------------


def test_no_words_about_how_the_work_was_organised() -> None:
    problems = []
    for path in scanned_files():
        rel = _rel(path)
        for number, what, words in forbidden_hits(path.read_text(encoding="utf-8", errors="replace")):
            problems.append(f"{rel}:{number}: {what}: {words!r}")
    assert not problems, (
        "say what the code does and why; date a finding by day (2026-12-07) or commit, cite docs/ for the rest:\n"
        + "\n".join(problems)
    )


# ---- links --------------------------------------------------------------------------------------------------

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.MULTILINE)
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def linked_docs() -> list[Path]:
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("experiments/*/README.md"))]
    return [p for p in paths if p.is_file()]


def links(text: str) -> list[str]:
    """The targets of the Markdown links in `text`, outside code."""
    prose = _INLINE_CODE.sub("", _FENCE.sub("", text))
    return _LINK.findall(prose) + _REFERENCE.findall(prose)


def anchors(markdown: str) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces to hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    out = set()
    for heading in _HEADING.findall(_FENCE.sub("", markdown)):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_link_parser() -> None:
    text = 'See [serving](docs/serving.md#sessions), ![plot](a.png "title") and `[not](code.md)`.\n'
    text += "```\n[no](x.md)\n```\n"
    assert links(text) == ["docs/serving.md#sessions", "a.png"]
    assert anchors("# Connect your agent\n## Sessions: `X-Session-Id`\n## Sessions: `X-Session-Id`\n") == {
        "connect-your-agent",
        "sessions-x-session-id",
        "sessions-x-session-id-1",
    }


def test_relative_links_resolve() -> None:
    broken = []
    for doc in linked_docs():
        for target in links(doc.read_text(encoding="utf-8")):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # https:, mailto:, ...
                continue
            path_part, _, fragment = target.partition("#")
            path = (doc.parent / path_part).resolve() if path_part else doc
            where = f"{_rel(doc)}: ({target})"
            if not path.exists():
                broken.append(f"{where}: no such file")
            elif ROOT not in path.parents and path != ROOT:
                broken.append(f"{where}: outside the repository")
            elif fragment and path.suffix == ".md" and fragment not in anchors(path.read_text(encoding="utf-8")):
                broken.append(f"{where}: no heading #{fragment}")
    assert not broken, "\n".join(broken)


def test_readme_is_an_entry_point() -> None:
    """README.md stays short and every docs/ page is reachable from it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in links(readme) if t.startswith("docs/")}
    unlinked = [_rel(p) for p in sorted((ROOT / "docs").glob("*.md")) if p.resolve() not in linked]
    assert not unlinked, f"docs pages the README does not link: {unlinked}"
