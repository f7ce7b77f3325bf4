#!/usr/bin/env bash
# One Triton bisect step for `git bisect run`: pip-build the Triton checkout, then test.
#
#   cd ~/src/triton
#   git bisect start BAD GOOD
#   git bisect run bash "$SCRIPTS/triton-step.sh" 'python /path/to/test_my_kernel.py' [options]
#
# The build runs `pip install --no-build-isolation -e` with the Python in TRITONBISECT_PYTHON
# (default: python3; use your target virtual environment's), with ccache on. A commit that
# does not build is skipped (125). Other options go to `tritonbisect step`.
set -u
test_cmd=${1:?usage: triton-step.sh TEST_CMD [tritonbisect step options]}
shift
py=${TRITONBISECT_PYTHON:-python3}
if [ -f python/setup.py ]; then src=python; else src=.; fi
build="TRITON_BUILD_WITH_CCACHE=true $py -m pip install --no-build-isolation --no-deps -e $src"
exec bash "$(dirname "${BASH_SOURCE[0]}")/bisect-step.sh" --build "$build" --test "$test_cmd" "$@"
