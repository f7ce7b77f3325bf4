"""python -m testing.toyworld OUT [--api-breaks N] ...: write a world, print its truth."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from testing.toyworld.world import make_world


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m testing.toyworld",
        description="Write the toy llvm-project/triton(/pytorch) repos and print the truth JSON.",
    )
    parser.add_argument("out", type=Path, help="directory to create the repos in")
    parser.add_argument("--api-breaks", type=int, default=1)
    parser.add_argument("--llvm-commits", type=int, default=40)
    parser.add_argument("--triton-commits", type=int, default=30)
    parser.add_argument("--extra-sources", type=int, default=0)
    parser.add_argument("--with-torch", action="store_true")
    parser.add_argument("--torch-commits", type=int, default=12)
    parser.add_argument("--regression-after-breaks", type=int, default=0)
    parser.add_argument("--eras", action="store_true",
                        help="Triton's later eras: root setup.py, cmake/llvm-info.json, build numbers")
    parser.add_argument("--fork", action="store_true",
                        help="the LLVM bump pins a fork commit (upstream + a local revert)")
    parser.add_argument("--amd-backend", action="store_true",
                        help="an AMD backend whose code generator is built against ROCm's LLVM")
    parser.add_argument("--toolchain", action="store_true",
                        help="the NVIDIA toolchain pin moves to a ptxas that miscompiles sub, and back")
    args = parser.parse_args(argv)
    try:
        world = make_world(
            args.out,
            api_breaks=args.api_breaks,
            llvm_commits=args.llvm_commits,
            triton_commits=args.triton_commits,
            extra_sources=args.extra_sources,
            with_torch=args.with_torch,
            torch_commits=args.torch_commits,
            regression_after_breaks=args.regression_after_breaks,
            eras=args.eras,
            fork=args.fork,
            amd_backend=args.amd_backend,
            toolchain=args.toolchain,
        )
    except (ValueError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(world.truth_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
