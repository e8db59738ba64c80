r"""Binned summaries of privatised reports, built in one group-by pass on any engine.

N clipped Gaussian or clipped exponential Laplace reports (:class:`~pymc_dpnoise.LaplacePerturbedClippedNormal`,
:class:`~pymc_dpnoise.LaplacePerturbedClippedExponential`) enter the likelihood through a
``(K + 2, 4)`` table, whatever N is:

=========  ===================================  =====================================================
row        reports                              columns
=========  ===================================  =====================================================
0          :math:`z \le a` (left tail)          :math:`n_L,\ \sum (a - z),\ 0,\ 0`
1 … K      :math:`a < z < b`, bin j = row − 1   :math:`n_j,\ \sum (z-c_j),\ \sum (z-c_j)^2,\ \sum |z-c_j|^3`
K + 1      :math:`z \ge b` (right tail)         :math:`n_R,\ \sum (z - b),\ 0,\ 0`
=========  ===================================  =====================================================

with :math:`h = (b - a)/K` and :math:`c_j = a + (j + \tfrac12) h`.  The tails are exact
sufficient statistics; the bins feed a second-order expansion of the log density around
:math:`c_j` whose error is bounded by :math:`\tfrac16 \sum_j \sup_j|f'''| \sum_{z \in j}|z - c_j|^3`
(:func:`pymc_dpnoise.math.clipped_normal_summary_logp` derives it).  Bins are aligned with
the clipping bounds, where the density has kinks.

**Bin assignment is the same expression on every engine**, so every engine gives identical
counts (moments differ only by summation order):

.. code-block:: text

    j   = min(max(floor((z - a) * r), 0), K - 1)        # r = K / (b - a), float64
    row = 0 if z <= a else K + 1 if z >= b else j + 1
    d   = a - z | z - (a + (j + 0.5) * h) | z - b        # left | inside | right

Engines (:func:`summarize` dispatches on the type of ``data``):

* NumPy arrays (and anything :func:`numpy.asarray` takes), handed to DuckDB as a one-column
  frame without a copy;
* a path to a Parquet or CSV file, or a DuckDB relation: read as a DuckDB relation, which
  Narwhals drives like any lazy frame, so DuckDB runs the group-by streaming the file
  (nothing is loaded into Python memory);
* any dataframe Narwhals knows (pandas, Polars eager or lazy, PyArrow, Dask, PySpark, ...),
  with the group-by executed by the backend itself (lazily where the backend is lazy).

The bin assignment is written once, as Narwhals expressions
(:meth:`ClippedBinning.narwhals_exprs`) that every engine runs (NumPy arrays through DuckDB).

The same engines build the summaries of the other models: :func:`summarize_histogram`
(distinct OUE / SUE / unary-encoding bit patterns or k-RR ids and their counts, for the
frequency likelihoods' ``counts=``) and :func:`summarize_regression` (N, column sums and the
scatter matrix, for :class:`~pymc_dpnoise.PerturbedLinRegSummary`).  ``pymc-dpnoise fit``
summarises clipped reports from :data:`SUMMARY_THRESHOLD` reports on
(:func:`summarize_if_large`).
"""

from .bins import choose_n_bins
from .clipped import (
    SUMMARY_THRESHOLD,
    ClippedBinning,
    ClippedSummary,
    aggregate,
    summarize,
    summarize_if_large,
)
from .histogram import HistogramSummary, summarize_histogram
from .logreg import MAX_LOGREG_EPSILON, LogRegSummary, summarize_logreg
from .regression import ScatterSummary, summarize_regression

__all__ = [
    "MAX_LOGREG_EPSILON",
    "SUMMARY_THRESHOLD",
    "ClippedBinning",
    "ClippedSummary",
    "HistogramSummary",
    "LogRegSummary",
    "ScatterSummary",
    "aggregate",
    "choose_n_bins",
    "summarize",
    "summarize_histogram",
    "summarize_if_large",
    "summarize_logreg",
    "summarize_regression",
]
