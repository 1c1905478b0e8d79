"""AtomicCheckpointIO: a background write saves the state as it was at the save call, and a failed
write leaves the previous checkpoint whole and raises where the trainer next waits."""

import pytest
import torch

from claw.checkpoint import AtomicCheckpointIO


@pytest.mark.parametrize("background", [True, False])
def test_the_written_state_is_the_state_at_the_save_call(tmp_path, background):
    io = AtomicCheckpointIO(background=background)
    state = {"state_dict": {"w": torch.zeros(1_000_000)}, "step": 1}
    io.save_checkpoint(state, tmp_path / "last.ckpt")
    state["state_dict"]["w"].add_(1.0)  # the next optimizer step, while the write may still run
    io.teardown()
    saved = torch.load(tmp_path / "last.ckpt", weights_only=False)
    assert saved["step"] == 1 and torch.equal(saved["state_dict"]["w"], torch.zeros(1_000_000))
    assert not (tmp_path / "last.ckpt.tmp").exists()


def test_a_failed_write_keeps_the_previous_checkpoint_and_raises(tmp_path, monkeypatch):
    io = AtomicCheckpointIO(background=True)
    path = tmp_path / "last.ckpt"
    io.save_checkpoint({"step": 1}, path)
    io.wait()

    def disk_full(obj, f):
        f.write(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", disk_full)
    io.save_checkpoint({"step": 2}, path)  # returns at once; the error comes from the thread
    with pytest.raises(OSError, match="No space left"):
        io.wait()
    monkeypatch.undo()
    assert torch.load(path, weights_only=False) == {"step": 1}
    io.save_checkpoint({"step": 3}, path)  # the plugin still works after a failure
    io.teardown()
    assert torch.load(path, weights_only=False) == {"step": 3}
