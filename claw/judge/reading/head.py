"""A learned reading beside the rules: a linear head on the embedded SmolLM2's hidden states (`judge.reader_head`).

The rule judge reads what it has classes for; on lines nobody tuned it against it reads 78–89 % right. The policy
model itself already represents what a reply means: a softmax head over its hidden states, trained on the labelled
feedback sets (`data/feedback/*.jsonl`, the sealed newest one left out), reads approval / correction / neither from
the feedback alone. The judge keeps the rules' reading unless the head is at least `min_p` sure of another
(`claw.judge.rule.RuleBackend`); no other model, no download — the features come from the checkpoint claw already
ships.

Features of one feedback line: the model sees `"User: " + feedback` (at most 64 feedback tokens); at layers 15, 22 and
30 the mean and the last hidden state over the feedback's tokens, concatenated (6 × 576 = 3,456 numbers). The head
standardises them with its training set's mean and spread, then one linear layer and a softmax over (approve,
correct, neutral). Train it (full-batch gradient descent from zero with an L2 penalty: deterministic):

    python -m claw.judge.reading.head data/feedback/dev.jsonl data/feedback/heldout.jsonl … --out head.npz
"""

from __future__ import annotations

import argparse
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CLASSES = ("approve", "correct", "neutral")
SCORES = {"approve": 1, "correct": -1, "neutral": 0}
LAYERS = (15, 22, 30)
PREFIX = "User: "
MAX_FEEDBACK_TOKENS = 64
SHIPPED = Path(__file__).with_name("head.npz")  # `judge.reader_head=shipped`
CACHE_SIZE = 4096  # feedback texts whose features are kept: a proxy serves for days, so the cache is bounded


class FeedbackEncoder:
    """The embedded SmolLM2, frozen, as a feature extractor for feedback lines (cached per text)."""

    def __init__(self, model_dir: str | Path | None = None) -> None:
        import torch
        from transformers import AutoTokenizer

        from claw.models import load_causal_lm, smollm2_dir

        path = Path(model_dir) if model_dir is not None else smollm2_dir()
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = load_causal_lm(path, dtype=torch.float32).eval()
        self.fingerprint = f"{self.model.config.model_type}:{self.model.config.hidden_size}:{len(self.tokenizer)}"
        self._torch = torch
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, feedback: str) -> np.ndarray:
        with self._lock:
            if feedback not in self._cache:
                self._cache[feedback] = self._encode(feedback)
                if len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
            self._cache.move_to_end(feedback)
            return self._cache[feedback]

    def _encode(self, feedback: str) -> np.ndarray:
        prefix = self.tokenizer(PREFIX, add_special_tokens=False)["input_ids"]
        ids = self.tokenizer(feedback, add_special_tokens=False)["input_ids"][:MAX_FEEDBACK_TOKENS] or [
            self.tokenizer.eos_token_id
        ]
        with self._torch.no_grad():
            hidden = self.model(self._torch.tensor([prefix + ids]), output_hidden_states=True).hidden_states
        parts = []
        for layer in LAYERS:
            states = hidden[layer][0, len(prefix) :]
            parts += [states.mean(0), states[-1]]
        return self._torch.cat(parts).numpy().astype(np.float64)


@dataclass
class ReaderHead:
    """Standardise, one linear layer, softmax over CLASSES; `fingerprint` names the encoder it was trained on."""

    mean: np.ndarray
    scale: np.ndarray
    weight: np.ndarray  # (features, 3)
    bias: np.ndarray  # (3,)
    fingerprint: str

    def probs(self, features: np.ndarray) -> np.ndarray:
        z = ((np.atleast_2d(features) - self.mean) / self.scale) @ self.weight + self.bias
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

    def save(self, path: str | Path) -> None:
        arrays = {"mean": self.mean, "scale": self.scale, "weight": self.weight, "bias": self.bias}
        np.savez(path, **arrays, fingerprint=self.fingerprint)

    @classmethod
    def load(cls, path: str | Path) -> ReaderHead:
        with np.load(path) as data:
            arrays = {k: data[k] for k in ("mean", "scale", "weight", "bias")}
            head = cls(**arrays, fingerprint=str(data["fingerprint"]))
        if head.weight.shape != (head.mean.shape[0], len(CLASSES)):
            raise ValueError(f"{path}: a reader head needs weight of shape (features, 3), got {head.weight.shape}")
        return head


def fit_head(
    features: np.ndarray, labels: np.ndarray, fingerprint: str, l2: float = 0.01, steps: int = 400, lr: float = 0.5
) -> ReaderHead:
    """Multinomial logistic regression, full-batch gradient descent from zero (deterministic); labels index CLASSES."""
    mean, scale = features.mean(axis=0), features.std(axis=0) + 1e-6
    x = (features - mean) / scale
    targets = np.eye(len(CLASSES))[labels]
    weight, bias = np.zeros((x.shape[1], len(CLASSES))), np.zeros(len(CLASSES))
    for _ in range(steps):
        z = x @ weight + bias
        p = np.exp(z - z.max(axis=1, keepdims=True))
        grad = p / p.sum(axis=1, keepdims=True) - targets
        weight -= lr * (x.T @ grad / len(x) + l2 * weight)
        bias -= lr * grad.mean(axis=0)
    return ReaderHead(mean, scale, weight, bias, fingerprint)


class LearnedReader:
    """The head with its encoder: `reading(feedback)` → (class, probability) of the head's most likely class."""

    def __init__(self, head_path: str | Path, encoder: FeedbackEncoder | None = None) -> None:
        path = SHIPPED if str(head_path) == "shipped" else Path(head_path)
        if not path.is_file():
            raise FileNotFoundError(f"judge.reader_head: no head at {path} (train one: python -m {__name__} --help)")
        self.head = ReaderHead.load(path)
        self.encoder = encoder or FeedbackEncoder()
        if self.head.fingerprint != self.encoder.fingerprint:
            raise ValueError(
                f"judge.reader_head {path} was trained on {self.head.fingerprint!r} features; the encoder is "
                f"{self.encoder.fingerprint!r} — retrain the head on this model"
            )

    def reading(self, feedback: str) -> tuple[str, float]:
        p = self.head.probs(self.encoder(feedback))[0]
        return CLASSES[int(p.argmax())], float(p.max())


def _labelled(paths: list[str]) -> list[dict]:
    rows = []
    for path in paths:
        rows += [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    bad = [r.get("id") for r in rows if r.get("reading") not in CLASSES]
    if bad:
        raise ValueError(f"every line needs a reading in {CLASSES}; these do not: {bad[:5]}")
    return rows


def main(argv: list[str] | None = None) -> ReaderHead:
    parser = argparse.ArgumentParser(prog=f"python -m {__name__}", description=__doc__.split("\n\n")[0])
    parser.add_argument("lines", nargs="+", help="labelled feedback files (claw.judge.evaluate's format)")
    parser.add_argument("--out", required=True, help="where to write the head (.npz)")
    parser.add_argument("--l2", type=float, default=0.01)
    args = parser.parse_args(argv)
    rows = _labelled(args.lines)
    encoder = FeedbackEncoder()
    features = np.stack([encoder(r["feedback"]) for r in rows])
    labels = np.array([CLASSES.index(r["reading"]) for r in rows])
    head = fit_head(features, labels, encoder.fingerprint, l2=args.l2)
    head.save(args.out)
    accuracy = float((head.probs(features).argmax(axis=1) == labels).mean())
    print(f"{len(rows)} lines → {args.out}  (training accuracy {accuracy:.1%}; measure it on lines it has not seen)")
    return head


if __name__ == "__main__":
    main()
