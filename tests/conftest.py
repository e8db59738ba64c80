import os
import sys

# Before NumPy is imported: one BLAS thread per test process (see the Makefile).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
sys.path.insert(0, os.path.dirname(__file__))
