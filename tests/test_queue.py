"""RolloutQueue: FIFO order, bound, staleness drop, persistence, torn-line repair, replay."""

import threading
import time

from claw.rollout.queue import RolloutQueue
from claw.types import Sample


def sample(group: str, version: int = 0, n_tokens: int = 2) -> Sample:
    return Sample(
        prompt_ids=[1, 2],
        response_ids=[3] * n_tokens,
        rollout_logprobs=[-0.1] * n_tokens,
        temperature=1.0,
        policy_version=version,
        group_id=group,
    )


def test_fifo_whole_groups_and_surplus_carried(tmp_path):
    q = RolloutQueue(tmp_path / "s.jsonl", max_size=100, fsync=False)
    for g in "abc":
        assert q.put([sample(g), sample(g)])
    t1 = q.take(batch_size=3, policy_version=0, timeout=1)
    assert [s.group_id for s in t1.samples] == ["a", "a"]  # group b would overflow 3: it waits
    assert t1.cursor_end == 2
    t2 = q.take(batch_size=4, policy_version=0, timeout=1)
    assert [s.group_id for s in t2.samples] == ["b", "b", "c", "c"]
    assert t2.cursor_end == 6 and len(q) == 0


def test_oversize_group_still_taken(tmp_path):
    q = RolloutQueue(tmp_path / "s.jsonl", fsync=False)
    q.put([sample("a") for _ in range(5)])
    assert len(q.take(batch_size=2, policy_version=0, timeout=1).samples) == 5


def test_bound_blocks_producer_until_consumed(tmp_path):
    q = RolloutQueue(tmp_path / "s.jsonl", max_size=2, fsync=False)
    assert q.put([sample("a"), sample("a")])
    assert not q.put([sample("b")], timeout=0.1)  # full
    done = threading.Event()
    threading.Thread(target=lambda: (q.put([sample("c")], timeout=5), done.set())).start()
    time.sleep(0.1)
    assert not done.is_set()
    q.take(2, 0, timeout=1)
    assert done.wait(5)
    assert q.accepted == 3


def test_staleness_drop_counted_and_cursor_advances(tmp_path):
    q = RolloutQueue(tmp_path / "s.jsonl", max_staleness=1, fsync=False)
    q.put([sample("old", version=0)])
    q.put([sample("ok", version=4)])
    t = q.take(batch_size=1, policy_version=5, timeout=1)
    assert [s.group_id for s in t.samples] == ["ok"]
    assert [s.group_id for s in t.dropped] == ["old"]
    assert q.dropped_stale == 1 and t.cursor_end == 2


def test_take_times_out_empty(tmp_path):
    q = RolloutQueue(tmp_path / "s.jsonl", fsync=False)
    assert q.take(1, 0, timeout=0.05) is None


def test_persisted_before_ack_and_replayed_from_cursor(tmp_path):
    path = tmp_path / "s.jsonl"
    q = RolloutQueue(path, fsync=True)
    groups = [[sample(g), sample(g)] for g in "abc"]
    for grp in groups:
        q.put(grp)
    assert len(path.read_text().splitlines()) == 6
    q.store.close()
    # a new process: trained up to cursor 2 (group a); b and c must come back, in order, same ids
    q2 = RolloutQueue(path, fsync=False)
    assert q2.replay(cursor=2) == 4
    t = q2.take(batch_size=4, policy_version=0, timeout=1)
    assert [s.sample_id for s in t.samples] == [s.sample_id for g in groups[1:] for s in g]
    assert t.cursor_end == 6
    q2.put([sample("d")])  # new samples continue the store
    assert len(path.read_text().splitlines()) == 7


def test_torn_last_line_is_repaired(tmp_path):
    path = tmp_path / "s.jsonl"
    q = RolloutQueue(path, fsync=False)
    q.put([sample("a")])
    q.store.close()
    with open(path, "a") as f:
        f.write('{"prompt_ids": [1, 2], "respo')  # kill -9 mid-write
    q2 = RolloutQueue(path, fsync=False)
    assert q2.replay(0) == 1
    q2.put([sample("b")])
    assert [s.group_id for s in q2.store.samples()] == ["a", "b"]


def test_group_cut_short_by_a_crash_is_not_accepted(tmp_path):
    path = tmp_path / "s.jsonl"
    q = RolloutQueue(path, fsync=False)
    full = [sample("a"), sample("a")]
    for s in full:
        s.group_size = 2
    q.put(full)
    part = sample("b")
    part.group_size = 2
    q.store.append(part.to_json())  # the crash came before the group's second sample
    q.store.close()
    q2 = RolloutQueue(path, fsync=False)
    assert [s.group_id for s in q2.store.samples()] == ["a", "a"]
    assert q2.replay(0) == 2


def test_a_batch_that_times_out_half_full_loses_nothing(tmp_path):
    """Live traffic trickles in: a take() that times out with part of a batch must put it back."""
    q = RolloutQueue(tmp_path / "s.jsonl", max_size=100, fsync=False)
    for i in range(3):
        q.put(
            [
                Sample(
                    prompt_ids=[1],
                    response_ids=[2],
                    rollout_logprobs=[-0.1],
                    temperature=1.0,
                    policy_version=0,
                    group_id=f"g{i}",
                    sample_id=f"s{i}",
                )
            ]
        )
    assert q.take(batch_size=4, policy_version=0, timeout=0.05) is None
    assert len(q) == 3
    q.put(
        [
            Sample(
                prompt_ids=[1],
                response_ids=[2],
                rollout_logprobs=[-0.1],
                temperature=1.0,
                policy_version=0,
                group_id="g3",
                sample_id="s3",
            )
        ]
    )
    taken = q.take(batch_size=4, policy_version=0, timeout=0.05)
    assert [s.sample_id for s in taken.samples] == ["s0", "s1", "s2", "s3"] and taken.cursor_end == 4


def test_a_store_written_by_an_older_version_still_loads() -> None:
    """Old sample records: `truncated` (retired) is dropped, `loss_mask` (renamed) is read as `response_mask`."""
    from claw.types import Sample

    old = {"prompt_ids": [1], "response_ids": [2, 3], "rollout_logprobs": [-0.1, -0.2], "temperature": 0.7,
           "policy_version": 0, "loss_mask": [1, 0], "truncated": False}  # fmt: skip
    s = Sample.from_json(old)
    assert s.response_mask == [1, 0] and "loss_mask" not in s.to_json() and "truncated" not in s.to_json()


def test_a_replayed_backlog_ends_a_batch_only_in_rounds(tmp_path):
    """Replay marks the backlog as a round of its own; without rounds that mark must not cut a batch short
    (an odd number of replayed groups made a half batch, and a run of fixed steps left a group untrained)."""
    for rounds, sizes in ((False, [4, 4]), (True, [4, 2])):
        path = tmp_path / f"rounds_{rounds}.jsonl"
        q = RolloutQueue(path, fsync=False)
        for g in "abc":
            q.put([sample(g), sample(g)])
        q.store.close()
        q2 = RolloutQueue(path, fsync=False)
        q2.rounds = rounds
        assert q2.replay(0) == 6
        q2.put([sample("d"), sample("d")])
        q2.end_round()
        assert [len(q2.take(4, 0, timeout=1).samples) for _ in range(2)] == sizes
