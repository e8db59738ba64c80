#!/usr/bin/env bash
# Wall and CPU time of the default test run (`make test`'s pytest command) from EMPTY compile
# caches, as on a fresh machine: a new PyTensor base_compiledir (which holds both the C modules
# and PyTensor's Numba cache, `<base_compiledir>/numba`) and a new NUMBA_CACHE_DIR.  Setting only
# `compiledir` is not enough: PyTensor's Numba cache stays under ~/.pytensor and is warm.
# CPU seconds are user + sys of the whole process tree (pytest, its xdist workers and every
# compiler they ran), from /usr/bin/time; the per-test plugin `benchmarks/cpu_per_test.py` adds
# the most expensive tests and files.  Writes benchmarks/results/cold_cache_tests.md with the
# machine's load before and after the run (on a shared machine the wall time is inflated by the
# load; CPU time much less so), the count of warnings and tracebacks in the output (both must be 0).
#
#   benchmarks/cold_cache_tests.sh            (needs .venv: `make setup`; PY=... to override)
#   MARK="heavy and not slow" OUT=cold_cache_tests_heavy benchmarks/cold_cache_tests.sh
#                                             (the `make test-heavy` run instead)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
MARK=${MARK:-not slow and not backend and not heavy}
OUT=benchmarks/results/${OUT:-cold_cache_tests}
CACHE=$(mktemp -d)
trap 'rm -rf "$CACHE"' EXIT
export PYTENSOR_FLAGS="base_compiledir=$CACHE/pytensor" NUMBA_CACHE_DIR="$CACHE/numba"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
export PYTHONPATH="$PWD/benchmarks${PYTHONPATH:+:$PYTHONPATH}" CPU_LOG="$CACHE/cpu.txt"
# Python's own bytecode cache is NOT emptied: pip and `make setup` (uv --compile-bytecode) write
# it at install time, so a user's first test run does not compile the sources of PyMC, PyTensor,
# JAX and SciPy.  Where the environment cannot hold it (a read-only venv, or
# PYTHONDONTWRITEBYTECODE=1, under which every process compiled them again: about 17 CPU-s per
# xdist worker) it lives in a persistent prefix, warmed by an untimed collection.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/pymc-dpnoise-pycache}
PYTENSOR_FLAGS="base_compiledir=$CACHE/warm" NUMBA_CACHE_DIR="$CACHE/warm/numba" \
  "$PY" -m pytest -m "$MARK" -q -p no:cacheprovider --co >/dev/null 2>&1 || true
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git rev-parse --short HEAD)  # the tree that is measured (before a long run)
log=$(mktemp)
set +e
# the same pytest command as `make test` (or MARK's target), plus the per-test CPU plugin
/usr/bin/time -f "%e %U %S %M" -o "$CACHE/time" \
  "$PY" -m pytest -m "$MARK" -n 2 --dist loadgroup -q -p no:cacheprovider -p cpu_per_test \
  --durations=20 >"$log" 2>&1
rc=$?
[ -n "${KEEP_CPU_LOG:-}" ] && cp "$CPU_LOG" "$KEEP_CPU_LOG"  # for benchmarks/select_heavy.py
set -e
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
read -r wall user sys maxrss <"$CACHE/time"
summary=$(tail -1 "$log")
n_warn=$(sed -n '/warnings summary/,/-- Docs/p' "$log" | grep -c "Warning" || true)
n_tb=$(grep -c -E "Traceback|Exception ignored" "$log" || true)
{
  echo "# Test run from empty compile caches: \`-m \"$MARK\"\`"
  echo
  echo "Command: \`$( [ "$MARK" = "not slow and not backend and not heavy" ] || echo "MARK=\"$MARK\" ")benchmarks/cold_cache_tests.sh\`"
  echo "(\`pytest -m \"$MARK\" -n 2 --dist loadgroup\` with a new PyTensor base_compiledir and"
  echo "NUMBA_CACHE_DIR), commit $commit, $(date -u +%Y-%m-%d)."
  echo
  echo "| | |"
  echo "|---|---|"
  echo "| CPU time (user + sys, all workers and compilers) | $(awk "BEGIN{printf \"%.0f\", $user+$sys}") s (user $(printf %.0f "$user"), sys $(printf %.0f "$sys")) |"
  echo "| CPU time / 2 cores (the wall time on an idle 2-core machine, at best) | $(awk "BEGIN{printf \"%.1f\", ($user+$sys)/120}") min |"
  echo "| wall time | $(printf %.0f "$wall") s ($(awk "BEGIN{printf \"%.1f\", $wall/60}") min) |"
  echo "| load average before / after the run | $load_before / $load_after ($(getconf _NPROCESSORS_ONLN) cores) |"
  echo "| pytest | $summary (exit $rc) |"
  echo "| warnings / tracebacks in the output | $n_warn / $n_tb |"
  echo
  echo "Most expensive tests (CPU s of the worker and its children, setup and teardown included;"
  echo "sum over tests $(awk '{s+=$1} END{printf "%.0f", s}' "$CPU_LOG") s of $(wc -l <"$CPU_LOG") tests):"
  echo
  echo '```'
  sort -rn "$CPU_LOG" | head -25 | awk '{printf "%7.1f  %s\n", $1, $3}'
  echo '```'
  echo
  echo "CPU s per file:"
  echo
  echo '```'
  awk '{split($3, a, "::"); s[a[1]] += $1; n[a[1]]++} END{for (f in s) printf "%7.1f %5d  %s\n", s[f], n[f], f}' "$CPU_LOG" | sort -rn | head -25
  echo '```'
  echo
  echo "Slowest tests (wall time, inflated by the load):"
  echo
  echo '```'
  sed -n '/slowest 20 durations/,/^$/p' "$log" | sed '1d;/^$/d'
  echo '```'
  if [ "$n_warn" != 0 ] || [ "$n_tb" != 0 ]; then
    echo
    echo "Warnings and tracebacks:"
    echo
    echo '```'
    sed -n '/warnings summary/,/-- Docs/p' "$log"
    grep -n -B2 -A12 -E "Traceback|Exception ignored" "$log" | head -80
    echo '```'
  fi
} >"$OUT.md"
cp "$CPU_LOG" "$OUT.cpu.txt" 2>/dev/null || true
sort -rn -o "$OUT.cpu.txt" "$OUT.cpu.txt"
cp "$log" "${LOG_COPY:-/tmp/$(basename "$OUT").log}"
cat "$OUT.md"
grep -E "^(FAILED|ERROR)" "$log" | head -20 || true
exit $rc
