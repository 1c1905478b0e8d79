"""The rows of a prompt dataset: a local JSONL / JSON / Parquet / CSV file, or a `datasets` library name.

`load_rows("data/arithmetic/train.jsonl")` and `load_rows("openai/gsm8k", split="train", dataset_config="main")`
both return a list of plain dicts, one per row. A name goes through `datasets.load_dataset` **offline**:
it must already be in the `datasets` cache (or be a local directory `datasets` can read, or one written
by `Dataset.save_to_disk`); nothing is downloaded at run time.

Values keep their file's types: JSONL and Parquet keep ints as ints; CSV gives strings (the
verifiers compare answers as numbers or normalised text, so "15" and 15 score the same).
"""

from __future__ import annotations

import contextlib
import csv
import json
import string
from collections.abc import Iterator
from pathlib import Path

FILE_FORMATS = (".jsonl", ".json", ".parquet", ".csv")
REPO_ROOT = Path(__file__).resolve().parents[2]


def resolve_path(path: str | Path) -> Path:
    """A relative data path is taken from the working directory, else from the repository root."""
    p = Path(path).expanduser()
    if p.is_absolute() or p.exists():
        return p
    return REPO_ROOT / p


def load_rows(spec: str, split: str = "train", dataset_config: str | None = None) -> list[dict]:
    """Rows of a local data file (by its suffix) or of a `datasets` name / directory (its `split`)."""
    path = resolve_path(spec)
    if path.suffix.lower() in FILE_FORMATS:
        if not path.is_file():
            raise FileNotFoundError(
                f"{spec}: no such file (a relative path is looked up in the working directory, then in {REPO_ROOT}); "
                "fix the path, or regenerate a shipped task with scripts/make_<task>.py"
            )
        rows = _read_file(path)
    else:
        rows = _load_dataset(str(path) if path.exists() else spec, split, dataset_config)
    if not rows:
        raise ValueError(f"{spec}: no rows")
    return rows


def _read_file(path: Path) -> list[dict]:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        rows = []
        for k, line in enumerate(path.read_text().splitlines()):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise ValueError(
                        f"{path} line {k + 1} is not JSON ({e.msg}); a JSONL file holds one JSON object per line"
                    ) from e
    elif suffix == ".json":
        rows = json.loads(path.read_text())
        if isinstance(rows, dict) and len(rows) == 1 and isinstance(next(iter(rows.values())), list):
            rows = next(iter(rows.values()))  # {"data": [...]} as well as [...]
    elif suffix == ".csv":
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    else:
        import pyarrow.parquet as pq  # a dependency of `datasets`

        rows = pq.read_table(path).to_pylist()
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError(
            f"{path}: every row must be an object with named fields (e.g. {{'question': ..., 'answer': ...}})"
        )
    return rows


def _load_dataset(name: str, split: str, dataset_config: str | None) -> list[dict]:
    import datasets

    with _offline(datasets):
        try:
            if Path(name).is_dir() and any((Path(name) / f).is_file() for f in ("state.json", "dataset_dict.json")):
                data = datasets.load_from_disk(name)
                data = data[split] if isinstance(data, datasets.DatasetDict) else data
            else:
                data = datasets.load_dataset(name, dataset_config, split=split)
        except (ConnectionError, FileNotFoundError) as e:
            raise FileNotFoundError(
                f"{name!r} is neither a local file ({', '.join(FILE_FORMATS)}) nor a dataset in the `datasets` cache "
                f"({e}). claw never downloads at run time: on a machine with network run "
                '`python -c "import datasets; '
                f'datasets.load_dataset({name!r}{", " + repr(dataset_config) if dataset_config else ""})"` '
                "to fill the cache (HF_DATASETS_CACHE), or export the rows "
                "to a JSONL/Parquet/CSV file and pass its path"
            ) from e
        except (KeyError, ValueError) as e:  # load_from_disk: KeyError; load_dataset: ValueError('Unknown split ...')
            if isinstance(e, ValueError) and "split" not in str(e):
                raise
            raise ValueError(
                f"{name!r} has no split {split!r} ({e}); set source.train_split / source.eval_split"
            ) from e
    return data.to_list()


@contextlib.contextmanager
def _offline(datasets) -> Iterator[None]:
    """`datasets` and the Hub client in offline mode for one load (both read these flags at call time)."""
    from huggingface_hub import constants

    saved = datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE, datasets.utils.are_progress_bars_disabled()
    datasets.config.HF_HUB_OFFLINE = constants.HF_HUB_OFFLINE = True
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE = saved[0], saved[1]
        if not saved[2]:
            datasets.enable_progress_bars()


def template_fields(template: str) -> list[str]:
    """The row fields a `str.format` template reads: "{question} ({unit})" -> ["question", "unit"]."""
    fields = []
    for _, name, _, _ in string.Formatter().parse(template):
        if name is not None:
            if name == "" or name.isdigit():
                raise ValueError(
                    f"template {template!r} has a positional field {{{name}}}; name a column, e.g. {{question}} "
                    f"(a literal brace is {{{{)"
                )
            root = name.split(".", 1)[0].split("[", 1)[0]
            if root not in fields:
                fields.append(root)
    return fields


def check_fields(rows: list[dict], fields: list[str], spec: str, what: str) -> None:
    """Fail naming the fix when some row lacks a field that `what` (a config key) reads."""
    for k, row in enumerate(rows):
        missing = [f for f in fields if f not in row]
        if missing:
            raise ValueError(
                f"{what} reads {', '.join(repr(m) for m in missing)}, but row {k} of {spec} has only the columns "
                f"{', '.join(row)}; change {what} to use those columns (or add the column to the data)"
            )
