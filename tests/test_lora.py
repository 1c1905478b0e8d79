"""LoRA: the engine receives merged weights W + BA·α/r that reproduce the adapted model exactly."""

import copy

import torch

from claw.engine import HFEngine
from claw.lora import apply_lora, is_lora, merged_state_dict


def test_merged_weights_reproduce_the_peft_model(tiny_policy):
    plain = copy.deepcopy(tiny_policy.model)
    peft_model = apply_lora(copy.deepcopy(tiny_policy.model), r=4, alpha=8)
    assert is_lora(peft_model) and not is_lora(plain)
    with torch.no_grad():  # give the adapters a non-zero update (B starts at zero)
        for n, p in peft_model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.1)
    merged = merged_state_dict(peft_model)
    assert set(merged) == set(plain.state_dict())  # plain names, no lora_ or base_layer keys
    engine = HFEngine(type("P", (), {"model": plain, "tokenizer": tiny_policy.tokenizer})())
    ids = [[5, 6, 7, 8]]
    before = engine.score(ids, [[9, 10, 11]])
    engine.load_weights(merged.items(), version=1)
    after = torch.tensor(engine.score(ids, [[9, 10, 11]]))
    x = torch.tensor([ids[0] + [9, 10, 11]])
    with torch.no_grad():
        logits = peft_model(input_ids=x).logits[0, 3:6].float()
    expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor([[9], [10], [11]])).squeeze(-1)
    assert torch.allclose(after[0], expected, atol=1e-4)
    assert not torch.allclose(torch.tensor(before[0]), expected, atol=1e-3)  # the merge really changed something
