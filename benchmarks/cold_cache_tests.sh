#!/usr/bin/env bash
# Wall and CPU time of the default test run (`make test`'s pytest command) from EMPTY compile
# caches, as on a fresh machine: a new PyTensor compiledir and a new Numba cache directory.
# Writes benchmarks/results/cold_cache_tests.md (with the machine's load before the run).
#
#   benchmarks/cold_cache_tests.sh            (needs .venv: `make setup`)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
CACHE=$(mktemp -d)
trap 'rm -rf "$CACHE"' EXIT
export PYTENSOR_FLAGS="compiledir=$CACHE/pytensor" NUMBA_CACHE_DIR="$CACHE/numba"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
load=$(cut -d' ' -f1-3 /proc/loadavg)
log=$(mktemp)
start=$(date +%s.%N)
set +e
/usr/bin/time -f "%e %U %S %M" -o "$CACHE/time" \
  $PY -m pytest -m "not slow" -n 2 -q -p no:cacheprovider >"$log" 2>&1
rc=$?
set -e
read -r wall user sys maxrss <"$CACHE/time"
summary=$(tail -1 "$log")
commit=$(git rev-parse --short HEAD)
{
  echo "# Default test run from empty compile caches"
  echo
  echo "Command: \`benchmarks/cold_cache_tests.sh\` (\`pytest -m \"not slow\" -n 2\` with a new"
  echo "PyTensor compiledir and NUMBA_CACHE_DIR), commit $commit, $(date -u +%Y-%m-%d)."
  echo
  echo "| | |"
  echo "|---|---|"
  echo "| wall time | $(printf %.0f "$wall") s ($(awk "BEGIN{printf \"%.1f\", $wall/60}") min; budget 8 min) |"
  echo "| CPU time (user + sys, all workers) | $(awk "BEGIN{printf \"%.0f\", $user+$sys}") s |"
  echo "| load average before the run | $load (2 cores) |"
  echo "| pytest | $summary (exit $rc) |"
} >benchmarks/results/cold_cache_tests.md
cat benchmarks/results/cold_cache_tests.md
grep -E "^(FAILED|ERROR)" "$log" | head -20 || true
exit $rc
