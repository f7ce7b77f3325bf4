#!/bin/sh
# A test program for `--regress perf` on a simulated machine that drifts: it prints
# TRITONBISECT_METRIC=<seconds>, the checkout's `speed` file (its code's own time) times the
# machine's state, times noise.
#
#     sh perf_machine.sh STATE_DIR SEED [WINDOW [SLOW [NOISE [MODE]]]]
#
# MODE "windows" (the default): the machine is SLOW (default 0.12: 12%) slower in alternating
# windows of WINDOW runs (default 4), counted by a counter in STATE_DIR that every run of
# every worker shares (under flock). MODE "bursts": a run falls in a burst (3x slower) one
# time in three, as when another process loads the GPU. The noise (default 0.01, normal) is
# drawn from SEED and the run's number: the same seed and the same order of runs measure the
# same times (deterministic with one worker). Written in sh and awk: a step runs it dozens
# of times.
set -eu
state=$1 seed=$2 window=${3:-4} slow=${4:-0.12} noise=${5:-0.01} mode=${6:-windows}
mkdir -p "$state"
run=$(flock "$state/lock" sh -c 'n=$(cat "$1" 2>/dev/null || echo 0); echo $((n + 1)) > "$1"; echo "$n"' _ "$state/counter")
awk -v own="$(cat speed)" -v run="$run" -v seed="$seed" -v window="$window" -v slow="$slow" \
    -v noise="$noise" -v mode="$mode" 'BEGIN {
    srand(seed * 1000003 + run); u1 = rand(); u2 = rand(); u3 = rand()
    g = sqrt(-2 * log(1 - u1)) * cos(6.283185307179586 * u2)
    if (mode == "bursts") f = (u3 < 1 / 3) ? 3 : 1
    else f = (int(run / window) % 2) ? 1 + slow : 1
    printf "TRITONBISECT_METRIC=%.6f\n", own * f * (1 + noise * g)
}'
