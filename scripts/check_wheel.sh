#!/usr/bin/env bash
# Build the wheel and install it into two fresh virtual environments outside the repository,
# as a new user would:
#
#   plain     pip install pymc-dpnoise              (PyMC's own sampler)
#   samplers  pip install "pymc-dpnoise[samplers,zarr]"   (nutpie, NumPyro/JAX, Zarr)
#
# In each, run the README's Example from an empty folder and compare what it prints with the
# output the README states for that install (the text block after `<!-- output: plain -->` or
# `<!-- output: samplers -->`; every number within 0.03, the Monte Carlo noise between machines
# and library versions), then `pymc-dpnoise fit ... --save post.zarr`: the plain install must
# refuse it before sampling with exit code 2 and name the extra (pip install
# "pymc-dpnoise[zarr]"), the other must write a Zarr store that xarray reads back.  The plain
# install also runs `pymc-dpnoise demo` (short chains) and must print both models and save the
# plot.  The wheel (`pip wheel .`) must be pure Python: `py3-none-any` (the Numba kernels are
# compiled at first use and cached by Numba, nothing is compiled into the wheel).
#
#   scripts/check_wheel.sh            (CI runs it; several minutes, most of it compiling)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=$("$ROOT/scripts/find-python.sh")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

"$PY" -m venv "$WORK/plain"
"$PY" -m venv "$WORK/samplers"
"$WORK/plain/bin/python" -m pip install --quiet --upgrade pip uv
UV="$WORK/plain/bin/uv"
"$WORK/plain/bin/python" -m pip wheel --quiet --no-deps --wheel-dir "$WORK/dist" "$ROOT"
wheel=$(ls "$WORK"/dist/pymc_dpnoise-*.whl)
case "$(basename "$wheel")" in
  *-py3-none-any.whl) echo "check_wheel: $(basename "$wheel") is a pure-Python wheel" ;;
  *) echo "check_wheel: pip wheel . gave $(basename "$wheel"), not a py3-none-any wheel" >&2; exit 1 ;;
esac
"$UV" pip install --python "$WORK/plain/bin/python" --quiet "$wheel"
"$UV" pip install --python "$WORK/samplers/bin/python" --quiet "${wheel}[samplers,zarr]"

# The first ```python block after "## Example" in the README, and the stated outputs.
"$WORK/plain/bin/python" - "$ROOT/README.md" "$WORK" <<'EOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
block = re.search(r"## Example.*?```python\n(.*?)```", text, re.S)
open(f"{sys.argv[2]}/example.py", "w", encoding="utf-8").write(block.group(1))
for install in ("plain", "samplers"):
    out = re.search(rf"<!-- output: {install} -->.*?```text\n(.*?)```", text, re.S)
    if out is None:
        sys.exit(f"check_wheel: README.md states no output for the {install} install")
    open(f"{sys.argv[2]}/expected-{install}.txt", "w", encoding="utf-8").write(out.group(1))
EOF

compare() {  # compare INSTALL OUTPUT_FILE: same lines, numbers within 0.03
  "$WORK/plain/bin/python" - "$WORK/expected-$1.txt" "$2" "$1" <<'EOF'
import re, sys
want, got, install = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
num = r"-?\d+\.\d+"
shape = lambda s: [re.sub(num, "#", line.rstrip()) for line in s.strip().splitlines()]
ok = shape(want) == shape(got)
if ok:
    diffs = [abs(float(a) - float(b)) for a, b in zip(re.findall(num, want), re.findall(num, got))]
    ok = max(diffs) <= 0.03
if not ok:
    sys.exit(f"check_wheel ({install}): the README states\n{want}but the example printed\n{got}")
print(f"check_wheel ({install}): the example printed what the README states "
      f"(largest difference {max(diffs):.2f})")
EOF
}

mkdir "$WORK/outside"
cd "$WORK/outside"
"$WORK/plain/bin/python" - <<'EOF'
import numpy as np
import pymc_dpnoise as pmd

rng = np.random.default_rng(0)
z = pmd.mechanisms.perturb_clipped(rng.normal(1.0, 2.0, 300), -5.0, 5.0, 1.0, rng)
np.savetxt("reports.csv", z, header="z", comments="")
EOF
FIT=(fit clipped-normal reports.csv --lower -5 --upper 5 --epsilon 1)
SHORT=(--draws 100 --tune 100 --chains 2 --quiet)

failed=0
for install in plain samplers; do
  venv="$WORK/$install"
  "$venv/bin/python" -c "import pymc_dpnoise, sys; assert '$ROOT' not in pymc_dpnoise.__file__, pymc_dpnoise.__file__"
  start=$SECONDS
  "$venv/bin/python" "$WORK/example.py" >"$WORK/out-$install.txt" 2>"$WORK/err-$install.txt" || {
    cat "$WORK/err-$install.txt" >&2; echo "check_wheel ($install): the README example failed" >&2; exit 1; }
  cat "$WORK/out-$install.txt"
  echo "check_wheel ($install): the example took $((SECONDS - start)) s"
  compare "$install" "$WORK/out-$install.txt" || failed=1
done
[ "$failed" -eq 0 ] || exit 1

# --save post.zarr: refused with the extra named (plain), written (samplers + zarr)
set +e
"$WORK/plain/bin/pymc-dpnoise" "${FIT[@]}" "${SHORT[@]}" --save post.zarr 2>"$WORK/zarr-err.txt"
rc=$?
set -e
cat "$WORK/zarr-err.txt"
if [ "$rc" -ne 2 ] || ! grep -qF 'pip install "pymc-dpnoise[zarr]"' "$WORK/zarr-err.txt" \
   || [ -e post.zarr ]; then
  echo "check_wheel (plain): --save post.zarr did not stop with exit code 2 naming the extra" >&2
  exit 1
fi
echo "check_wheel (plain): --save post.zarr refused before sampling, naming the extra"
"$WORK/samplers/bin/pymc-dpnoise" "${FIT[@]}" "${SHORT[@]}" --save post.zarr >/dev/null
"$WORK/samplers/bin/python" -c "
import xarray as xr
tree = xr.open_datatree('post.zarr', engine='zarr')
assert tree['posterior'].sizes['draw'] == 100, tree
"
echo "check_wheel (samplers): --save post.zarr wrote a Zarr store that xarray reads back"

# the demo with the plain install (PyMC's sampler)
"$WORK/plain/bin/pymc-dpnoise" demo "${SHORT[@]}" --out demo.png >"$WORK/demo.txt" 2>/dev/null
cat "$WORK/demo.txt"
grep -q "noise-aware" "$WORK/demo.txt" && grep -q "naive" "$WORK/demo.txt" && [ -s demo.png ] || {
  echo "check_wheel (plain): pymc-dpnoise demo did not print both models and save the plot" >&2
  exit 1; }
echo "check_wheel: $(basename "$wheel") installed outside the repository, plain and [samplers,zarr]: README example, --save .zarr and demo as the README states"
