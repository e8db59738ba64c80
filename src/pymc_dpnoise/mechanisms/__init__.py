"""Release-side mechanisms: what the data holder, or each client under local DP, runs.

Everything here is NumPy, takes a :class:`numpy.random.Generator` ``rng`` and broadcasts
over its arguments, so a vector ``epsilon`` gives each record its own budget.

.. warning::

   These functions are **simulation grade**.  They draw floating-point noise with NumPy,
   which is not hardened against the known attacks on floating-point implementations of
   the Laplace and Gaussian mechanisms (Mironov 2012, "On significance of the least
   significant bits for differential privacy").  Use them to simulate releases and to test
   models.  To release real data, use a hardened library such as
   `OpenDP <https://opendp.org>`_, then model its output with this package.
"""

from .core import (
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    clip,
    clipped_sensitivity,
    gaussian_mechanism,
    laplace_mechanism,
    perturb_clipped,
    perturb_clipped_exponential,
    randomized_response,
)
from .frequency import (
    clip_normalize,
    compress_reports,
    krr_estimate,
    krr_perturb,
    krr_probabilities,
    oue_estimate,
    oue_perturb,
    oue_probabilities,
    project_simplex,
    sue_perturb,
    sue_probabilities,
    unary_encoding_estimate,
    unary_encoding_perturb,
)

__all__ = [
    "analytic_gaussian_sigma",
    "classical_gaussian_sigma",
    "clip",
    "clip_normalize",
    "clipped_sensitivity",
    "compress_reports",
    "gaussian_mechanism",
    "krr_estimate",
    "krr_perturb",
    "krr_probabilities",
    "laplace_mechanism",
    "oue_estimate",
    "oue_perturb",
    "oue_probabilities",
    "perturb_clipped",
    "perturb_clipped_exponential",
    "project_simplex",
    "randomized_response",
    "sue_perturb",
    "sue_probabilities",
    "unary_encoding_estimate",
    "unary_encoding_perturb",
]
