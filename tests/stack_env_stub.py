"""Environment server used by the stack tests where ``navi-environment serve`` is not available.

``SdfDagBackend`` on one ``.gmdag`` behind :class:`navi_actor.service.env_bridge.VectorEnvBridge`
(the step protocol of ``docs/service.md``). Run: ``python tests/stack_env_stub.py --rep EP
[--pub EP] --gmdag-file F --actors N`` (sensor size from ``NAVI_ENV_SENSOR__*``).
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

import torch

from navi_actor.service.env_bridge import VectorEnvBridge
from navi_contracts import Publisher, RepServer, StepRequest
from navi_contracts.logging import configure_logging
from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings


def main() -> None:
    """Parse the flags and serve until SIGINT."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rep", required=True)
    parser.add_argument("--pub")
    parser.add_argument("--gmdag-file", required=True, type=Path)
    parser.add_argument("--actors", type=int, default=1)
    args = parser.parse_args()
    configure_logging("info", json=True)
    torch.set_num_threads(1)
    backend = SdfDagBackend(EnvironmentSettings(), args.actors, scene_paths=[args.gmdag_file])
    publisher = Publisher(args.pub) if args.pub else None
    bridge = VectorEnvBridge(backend, publisher)  # type: ignore[arg-type]
    with RepServer(args.rep, bridge, accepts=(StepRequest,)) as rep:
        print("stub: serving", flush=True)
        try:
            rep.serve(threading.Event())
        except KeyboardInterrupt:
            sys.exit(0)


if __name__ == "__main__":
    main()
