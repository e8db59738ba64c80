#!/usr/bin/env bash
# Print the path of a Python >= 3.12 interpreter, or fail with a clear message.
set -u
ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }
for cand in "${PYTHON:-}" python3.12 python3.13 python3; do
  [ -n "$cand" ] || continue
  if ok "$cand"; then command -v "$cand" 2>/dev/null || echo "$cand"; exit 0; fi
done
# pyenv installs that are not on PATH (python3.12 may be a shim for a non-global version)
for cand in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12 \
            "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3.13 \
            /usr/bin/python3.12 /usr/local/bin/python3.12; do
  if [ -x "$cand" ] && ok "$cand"; then echo "$cand"; exit 0; fi
done
echo "error: no Python >= 3.12 found (set PYTHON=/path/to/python3.12)" >&2
exit 1
