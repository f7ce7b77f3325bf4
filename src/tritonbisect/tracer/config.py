# ruff: noqa: UP031  (runs on the traced program's Python, which may be older than the tool's)
"""What the tracer is told through the environment (set by `tritonbisect trace`)."""

import fnmatch
import os

ENV_DIR = "TRITONBISECT_TRACE_DIR"
ENV_KERNELS = "TRITONBISECT_TRACE_KERNELS"  # comma-separated fnmatch patterns
ENV_MAX_BLOB_LAUNCHES = "TRITONBISECT_TRACE_MAX_BLOB_LAUNCHES"  # per kernel and process; 0 = no blobs
ENV_AFTER = "TRITONBISECT_TRACE_AFTER"  # "0": no outputs after the launch (no device sync)
ENV_RUN = "TRITONBISECT_TRACE_RUN"  # this run's token, so a folder traced into twice tells the runs apart

ERRORS_LOG = "tracer_errors.log"
DEFAULT_MAX_BLOB_LAUNCHES = 16


def out_dir():
    return os.environ.get(ENV_DIR) or None


def kernel_wanted(name):
    patterns = [p.strip() for p in os.environ.get(ENV_KERNELS, "").split(",") if p.strip()]
    return not patterns or any(fnmatch.fnmatch(str(name), p) for p in patterns)


def max_blob_launches():
    try:
        return int(os.environ.get(ENV_MAX_BLOB_LAUNCHES, str(DEFAULT_MAX_BLOB_LAUNCHES)))
    except ValueError:
        return DEFAULT_MAX_BLOB_LAUNCHES


def outputs_after():
    return os.environ.get(ENV_AFTER, "1") != "0"


def run_token():
    return os.environ.get(ENV_RUN, "")
