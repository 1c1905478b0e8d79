"""claw's size limits: no module over 400 lines, no function or method over 80 (end_lineno - lineno + 1, the
decorators not counted). A part that grows past them is split by what it does."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted(p for p in (ROOT / "claw").rglob("*.py") if "__pycache__" not in p.parts)


def test_no_module_is_over_400_lines():
    long = []
    for path in _modules():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_FILE_LINES:
            long.append(f"{path.relative_to(ROOT)}: {n} lines")
    assert not long, f"modules over {MAX_FILE_LINES} lines:\n" + "\n".join(long)


def test_no_function_is_over_80_lines():
    long = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {n} lines")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)
