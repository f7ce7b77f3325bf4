#!/usr/bin/env bash
# One bisect step for `git bisect run`, through `tritonbisect step`:
#
#   git bisect run bash "$SCRIPTS/bisect-step.sh" --build 'make -j8' --test './check.sh'
#
# builds and tests the current checkout once and exits only with git bisect's codes:
# 0 good, 1 bad, 125 skip (e.g. the commit does not build), 128 abort. A test's own exit
# code (a segfault's 139, a test's own 125) is classified, never passed through.
# Options: those of `tritonbisect step --help` (--timeout, --env K=V, --repeat, --regress ...).
# TRITONBISECT_PYTHON picks the Python that has tritonbisect when it is not on PATH.
set -u
if command -v tritonbisect >/dev/null 2>&1; then
  tritonbisect step "$@"
else
  "${TRITONBISECT_PYTHON:-python3}" -m tritonbisect.cli step "$@"
fi
rc=$?
case "$rc" in
  0 | 1 | 125) exit "$rc" ;;
  *) exit 128 ;;
esac
