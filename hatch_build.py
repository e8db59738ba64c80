"""Build hook: compile the package's Numba kernel entry points when the wheel is built
(``pymc_dpnoise/math/_aot.py`` says why and how they are used).

Runs ``pymc_dpnoise/math/_aot_build.py`` with the build environment's Python (Numba and NumPy
are build requirements, ``pyproject.toml``).  A regular wheel carries the compiled files
(``pymc_dpnoise/math/_aot_objects/``) and is tagged for this platform; an editable install
writes them into the source tree.  Should the compile fail, the package is built without
them, with a warning: it then compiles its kernels at first use, as before.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

_REL = "pymc_dpnoise/math/_aot_objects"


class PrecompiledKernelsHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        script = root / "pymc_dpnoise" / "math" / "_aot_build.py"
        if version == "editable":
            out = root / _REL
        else:
            self._tmp = Path(tempfile.mkdtemp(prefix="pymc-dpnoise-aot-"))
            out = self._tmp / "_aot_objects"
        try:
            subprocess.run(
                [sys.executable, str(script), str(out)],
                check=True,
                capture_output=True,
                text=True,
            )
        except (OSError, subprocess.CalledProcessError) as exc:
            detail = getattr(exc, "stderr", "") or str(exc)
            self.app.display_warning(
                "pymc-dpnoise: could not precompile the Numba kernels; they will compile at "
                f"first use.\n{detail[-3000:]}"
            )
            return
        if version != "editable":
            for f in sorted(out.iterdir()):
                build_data["force_include"][str(f)] = f"{_REL}/{f.name}"
        # object code for this platform: a platform wheel
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version, build_data, artifact_path):
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
