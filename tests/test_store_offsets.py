"""A restart reads samples.jsonl from the checkpoint's byte offset on, not the whole history.

The checkpoint saves, with the queue cursor, the byte offset where the cursor falls in the store and the
id of the sample just before it. These tests make the bytes before that line unreadable: a resume that
still reads them fails, one that seeks does not — and trains exactly what a clean resume trains. A
checkpoint without an offset (older versions) and one that does not match the file fall back to counting
lines, with a warning.
"""

import json
import logging
import shutil

import pytest

from claw.rollout.datamodule import END, WAIT, RolloutDataModule
from claw.rollout.store import JsonlLog
from claw.types import Sample

GROUPS, GROUP_SIZE, BATCH = 120, 2, 8  # 240 samples: 30 batches
STEPS_BEFORE = 20  # trained before the "crash": 160 samples behind the cursor


def sample(group_id: str, j: int) -> Sample:
    return Sample(
        prompt_ids=[1, 2], response_ids=[3, 4], rollout_logprobs=[-0.1, -0.2], temperature=1.0, policy_version=0,
        group_id=group_id, group_size=GROUP_SIZE, source="count", sample_id=f"{group_id}-{j}",
    )  # fmt: skip


class CountingSource:
    """Groups g0, g1, ... with ids fixed by their number; a restart goes on from `resume_from`."""

    name = "count"

    def __init__(self, total: int, stop_at: int | None = None) -> None:
        self.total, self.stop_at = total, stop_at
        self.exhausted = False
        self.error = None
        self.resume_from = None

    def start(self, queue, resume_from: int = 0) -> None:
        self.resume_from = resume_from
        for k in range(resume_from, self.stop_at or self.total):
            group = [sample(f"g{k}", j) for j in range(GROUP_SIZE)]
            assert queue.put(group, timeout=5)
        self.exhausted = self.stop_at is None

    def stop(self) -> None:
        pass


def datamodule(run_dir, source) -> RolloutDataModule:
    return RolloutDataModule(
        run_dir, [source], pad_id=0, batch_size=BATCH, max_queue_size=10_000, fsync=False, poll_seconds=0.05
    )


def train(dm: RolloutDataModule, steps: int | None = None) -> list[str]:
    """Take and commit batches (as the trainer does) until `steps` or the end; the sample ids trained."""
    dm.start()
    trained: list[str] = []
    done = 0
    while steps is None or done < steps:
        item = dm.next_item()
        if item == END:
            break
        if item == WAIT:
            continue
        done += 1
        dm.commit(dm.step + 1, item)
        trained += item.sample_ids
    return trained


def crashed_run(run_dir):
    """Train STEPS_BEFORE batches of a 120-group run whose source has produced 100 groups; the checkpoint."""
    dm = datamodule(run_dir, CountingSource(GROUPS, stop_at=100))
    trained = train(dm, STEPS_BEFORE)
    state = dm.state_dict()
    dm.stop()
    dm.queue.store.close()
    dm.ledger.close()
    return trained, state


def resume(run_dir, state) -> tuple[list[str], RolloutDataModule]:
    source = CountingSource(GROUPS)
    dm = datamodule(run_dir, source)
    dm.load_state_dict(state)
    trained = train(dm)
    dm.stop()
    return trained, dm


def garble_before(path, offset: int) -> int:
    """Overwrite every byte before the line that ends at `offset` with garbage (newlines kept, same length)."""
    data = bytearray(path.read_bytes())
    last_line = data.rfind(b"\n", 0, offset - 1) + 1
    for i in range(last_line):
        if data[i] != ord("\n"):
            data[i] = ord("#")
    path.write_bytes(bytes(data))
    return last_line


def test_resume_reads_the_store_from_the_cursor_offset(tmp_path):
    clean, broken = tmp_path / "clean", tmp_path / "broken"
    before, state = crashed_run(clean)
    assert state["store_offset"] > 0 and state["store_last_id"] == before[-1]
    shutil.copytree(clean, broken)
    store = broken / "samples.jsonl"
    size = store.stat().st_size
    garbled = garble_before(store, state["store_offset"])
    assert garbled > size / 2  # most of the history is unreadable now

    after_clean, dm_clean = resume(clean, state)
    after, dm = resume(broken, state)
    # exactly what a clean resume trains: the rest of the 120 groups, each sample once, in order
    assert after == after_clean
    assert before + after == [f"g{k}-{j}" for k in range(GROUPS) for j in range(GROUP_SIZE)]
    assert dm.sources[0].resume_from == 100 == dm_clean.sources[0].resume_from  # groups before + after the cursor
    # the restart read the tail only
    assert dm.queue.replay_read_bytes == size - state["store_offset"] < size / 2


def test_old_checkpoint_without_offset_counts_lines(tmp_path, caplog):
    before, state = crashed_run(tmp_path)
    old = {"cursor": state["cursor"], "step": state["step"]}  # what older versions saved
    with caplog.at_level(logging.WARNING, logger="claw.rollout.queue"):
        after, dm = resume(tmp_path, old)
    assert "no store offset" in caplog.text
    assert before + after == [f"g{k}-{j}" for k in range(GROUPS) for j in range(GROUP_SIZE)]
    assert dm.sources[0].resume_from == 100
    assert dm.state_dict()["store_offset"] == (tmp_path / "samples.jsonl").stat().st_size  # saved from now on


@pytest.mark.parametrize("damage", ["rewritten", "mid_line", "wrong_sample"])
def test_an_offset_that_does_not_match_the_file_falls_back(tmp_path, caplog, damage):
    """The file was rewritten (same records, other bytes), or the offset is off: never skip or repeat a sample."""
    before, state = crashed_run(tmp_path)
    path = tmp_path / "samples.jsonl"
    if damage == "rewritten":  # the same records with other separators: every offset moves
        log = JsonlLog(path, fsync=False)
        records = list(log.read())
        log.close()
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    elif damage == "mid_line":
        state = {**state, "store_offset": state["store_offset"] - 7}
    else:  # the line before the offset is another sample: the offset of an earlier cursor
        state = {**state, "store_last_id": "g0-0"}
    with caplog.at_level(logging.WARNING, logger="claw.rollout.queue"):
        after, dm = resume(tmp_path, state)
    assert "reading it from the start" in caplog.text
    assert before + after == [f"g{k}-{j}" for k in range(GROUPS) for j in range(GROUP_SIZE)]
    assert dm.sources[0].resume_from == 100


def test_a_store_shorter_than_the_cursor_is_an_error(tmp_path):
    """A truncated store cannot be read from the cursor: fail, never train on as if nothing were missing."""
    _, state = crashed_run(tmp_path)
    path = tmp_path / "samples.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:50]))
    dm = datamodule(tmp_path, CountingSource(GROUPS))
    dm.load_state_dict(state)
    with pytest.raises(RuntimeError, match="fewer than the checkpoint's cursor"):
        dm.start()


def test_read_back_walks_lines_from_the_end(tmp_path):
    log = JsonlLog(tmp_path / "x.jsonl", fsync=False)
    records = [{"i": i, "pad": "x" * (i * 997 % 70_000)} for i in range(40)]  # lines longer than a read chunk too
    ends = [log.append(r) and log.size for r in records]
    back = list(log.read_back())
    assert [int(json.loads(line)["i"]) for _, line in back] == list(range(39, -1, -1))
    assert [start for start, _ in back] == [0, *ends[:-1]][::-1]
    assert [r for _, r in log.read_from(ends[9])] == records[10:]
    assert [e for e, _ in log.read_from(ends[9])] == ends[10:]
