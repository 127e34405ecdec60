"""``python -m sc2_envs.sc2api install --path DIR [--build N]`` (see ``sc2_envs.sc2api.install``)."""

from __future__ import annotations

import argparse
import sys

from sc2_envs.sc2api.install import install
from sc2_envs.sc2api.server import DEFAULT_BUILD


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sc2_envs.sc2api")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("install", help="lay out a StarCraft II folder that launches the simulator's API server")
    p.add_argument("--path", required=True, help="folder to use as SC2PATH")
    p.add_argument("--build", type=int, default=DEFAULT_BUILD, help=f"Versions/Base<build> (default {DEFAULT_BUILD})")
    args = parser.parse_args(argv)
    exe = install(args.path, build=args.build)
    root = exe.parents[2]
    print(f"installed {exe}\nmaps in {root / 'Maps' / 'SMAC_Maps'}\nuse it with: export SC2PATH={root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
