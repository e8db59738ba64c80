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

__all__ = [
    "analytic_gaussian_sigma",
    "classical_gaussian_sigma",
    "clip",
    "clipped_sensitivity",
    "gaussian_mechanism",
    "laplace_mechanism",
    "perturb_clipped",
    "perturb_clipped_exponential",
    "randomized_response",
]
