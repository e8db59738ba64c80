#!/usr/bin/env bash
# Wall and CPU time of the default test run (`make test`'s pytest command) from EMPTY compile
# caches, as on a fresh machine: a new PyTensor base_compiledir (which holds both the C modules
# and PyTensor's Numba cache, `<base_compiledir>/numba`) and a new NUMBA_CACHE_DIR.  Setting only
# `compiledir` is not enough: PyTensor's Numba cache stays under ~/.pytensor and is warm.
# Writes benchmarks/results/cold_cache_tests.md with the machine's load before and after the run
# (on a shared machine the wall time is inflated by the load; CPU time much less so).
#
#   benchmarks/cold_cache_tests.sh            (needs .venv: `make setup`; PY=... to override)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
CACHE=$(mktemp -d)
trap 'rm -rf "$CACHE"' EXIT
export PYTENSOR_FLAGS="base_compiledir=$CACHE/pytensor" NUMBA_CACHE_DIR="$CACHE/numba"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git rev-parse --short HEAD)  # the tree that is measured (before a long run)
log=$(mktemp)
set +e
# the same pytest command as `make test`
/usr/bin/time -f "%e %U %S %M" -o "$CACHE/time" \
  "$PY" -m pytest -m "not slow and not backend" -n 2 --dist loadgroup -q -p no:cacheprovider --durations=20 \
  >"$log" 2>&1
rc=$?
set -e
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
read -r wall user sys maxrss <"$CACHE/time"
summary=$(tail -1 "$log")
{
  echo "# Default test run from empty compile caches"
  echo
  echo "Command: \`benchmarks/cold_cache_tests.sh\` (\`pytest -m \"not slow and not backend\" -n 2 --dist loadgroup\`"
  echo "with a new PyTensor base_compiledir and NUMBA_CACHE_DIR), commit $commit, $(date -u +%Y-%m-%d)."
  echo
  echo "| | |"
  echo "|---|---|"
  echo "| wall time | $(printf %.0f "$wall") s ($(awk "BEGIN{printf \"%.1f\", $wall/60}") min; budget 8 min on 2 idle cores) |"
  echo "| CPU time (user + sys, all workers and compilers) | $(awk "BEGIN{printf \"%.0f\", $user+$sys}") s (user $(printf %.0f "$user"), sys $(printf %.0f "$sys")) |"
  echo "| CPU time / 2 cores (the wall time on an idle 2-core machine, at best) | $(awk "BEGIN{printf \"%.1f\", ($user+$sys)/120}") min |"
  echo "| load average before / after the run | $load_before / $load_after ($(getconf _NPROCESSORS_ONLN) cores) |"
  echo "| pytest | $summary (exit $rc) |"
  echo
  echo "Slowest tests (wall time, inflated by the load):"
  echo
  echo '```'
  sed -n '/slowest 20 durations/,/^$/p' "$log" | sed '1d;/^$/d'
  echo '```'
  if grep -q "warnings summary" "$log"; then
    echo
    echo "Warnings:"
    echo
    echo '```'
    sed -n '/warnings summary/,/-- Docs/p' "$log"
    echo '```'
  fi
} >benchmarks/results/cold_cache_tests.md
cat benchmarks/results/cold_cache_tests.md
grep -E "^(FAILED|ERROR)" "$log" | head -20 || true
exit $rc
