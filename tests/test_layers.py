"""The layering of `claw` (pyproject.toml, [tool.importlinter]) holds: no import runs up the layers and
the engine protocol does not import its implementations. The same check is `make lint`'s lint-imports."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_every_package_of_claw_is_a_real_package():
    # a folder without __init__.py is a namespace package, which the layer check silently skips
    for folder in (ROOT / "claw").rglob("*"):
        if folder.is_dir() and folder.name != "__pycache__" and any(folder.glob("*.py")):
            assert (folder / "__init__.py").exists(), f"{folder.relative_to(ROOT)} has no __init__.py"
