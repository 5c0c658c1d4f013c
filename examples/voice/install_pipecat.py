"""Install pipecat-ai for the example phone bot without touching protobuf.

pipecat-ai (every release to 1.14) requires protobuf<7, while this project's otel and ray extras run on
protobuf 7; pip would downgrade it. The example bot never imports protobuf (only pipecat's protobuf
serializer does), so pipecat-ai goes in without its pins and its other requirements are installed from
its own metadata, protobuf left out:

    python examples/voice/install_pipecat.py
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

PIPECAT = "pipecat-ai==1.14.0"
WITHOUT = {"protobuf"}
EXTRAS = {"websocket"}  # the FastAPI WebSocket transport


def _wanted(requirement: str) -> str | None:
    name_part, _, marker = requirement.partition(";")
    name = name_part.split("[")[0].strip().split("<")[0].split(">")[0].split("=")[0].split("~")[0].strip()
    if name.lower() in WITHOUT:
        return None
    if "extra ==" in marker and not any(f'extra == "{extra}"' in marker for extra in EXTRAS):
        return None
    return requirement if "extra ==" not in marker else name_part.strip()


def main() -> None:
    pip = [sys.executable, "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--no-deps", PIPECAT], check=True)
    requirements = [r for r in map(_wanted, importlib.metadata.requires("pipecat-ai") or []) if r]
    subprocess.run([*pip, *requirements], check=True)


if __name__ == "__main__":
    main()
