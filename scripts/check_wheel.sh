#!/usr/bin/env bash
# Build the wheel, install it with the `samplers` extra into a fresh virtual environment outside
# the repository, and run the README's example there: what a new user does after
# `pip install pymc-dpnoise[samplers]`.  Fails unless the example prints the three result lines.
#
#   scripts/check_wheel.sh            (CI runs it; ~1-2 min with a warm package cache)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=$("$ROOT/scripts/find-python.sh")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --quiet --upgrade pip uv
"$WORK/venv/bin/uv" build --quiet --wheel --out-dir "$WORK/dist" "$ROOT"
wheel=$(ls "$WORK"/dist/pymc_dpnoise-*.whl)
"$WORK/venv/bin/uv" pip install --python "$WORK/venv/bin/python" --quiet "${wheel}[samplers]"

# The first ```python block after "## Example" in the README, run from an empty folder.
"$WORK/venv/bin/python" - "$ROOT/README.md" "$WORK/example.py" <<'EOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
block = re.search(r"## Example.*?```python\n(.*?)```", text, re.S)
open(sys.argv[2], "w", encoding="utf-8").write(block.group(1))
EOF
mkdir "$WORK/outside"
cd "$WORK/outside"
out=$("$WORK/venv/bin/python" "$WORK/example.py" 2>/dev/null)
echo "$out"
"$WORK/venv/bin/python" -c "import pymc_dpnoise, sys; assert '$ROOT' not in pymc_dpnoise.__file__, pymc_dpnoise.__file__"
for who in noise-aware naive truth; do
  grep -q "^ *$who: mu = " <<<"$out" || { echo "check_wheel: no '$who' line in the output" >&2; exit 1; }
done
echo "check_wheel: $(basename "$wheel") installed outside the repository; README example ran"
