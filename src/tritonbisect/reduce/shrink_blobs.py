#!/usr/bin/env python3
# ruff: noqa: UP031  (runs on the target's Python, which may be older than the tool's)
"""Run by a target Python (it has torch): write the first rows of tensor blobs.
argv: a JSON file holding [{"src", "dst", "rows"}]; each dst gets src[:rows], contiguous."""

import gzip
import io
import json
import os
import sys

import torch


def load(path):
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except TypeError:
        return torch.load(io.BytesIO(data), map_location="cpu")


def main():
    with open(sys.argv[1], encoding="utf-8") as fh:
        jobs = json.load(fh)
    for job in jobs:
        if os.path.exists(job["dst"]):
            continue
        tensor = load(job["src"])[: job["rows"]].contiguous().clone()
        tmp = job["dst"] + ".tmp%d" % os.getpid()
        torch.save(tensor, tmp)
        os.replace(tmp, job["dst"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
