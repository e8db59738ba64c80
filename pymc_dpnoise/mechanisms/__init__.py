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

The posterior-release mechanisms of Zhang, Rubinstein & Dimitrakakis (AAAI 2016)
(``laplace_posterior_updates``, ``fourier_posterior_updates``, ``posterior_sample``,
``posterior_sample_linreg``, ``exponential_map``, the ``Release`` record and their privacy
bookkeeping) live with the rest of that paper in :mod:`pymc_dpnoise.posterior_release`.  They
are importable from here too, as the same objects, loaded on first use: that subpackage builds
on this one's ``core``, so importing it eagerly here would make an import cycle.
"""

from .core import (
    analytic_gaussian_sigma,
    as_matrix,
    classical_gaussian_sigma,
    clip,
    clip_rows,
    clipped_sensitivity,
    gaussian_mechanism,
    laplace_mechanism,
    perturb_clipped,
    perturb_clipped_exponential,
    randomized_response,
)
from .counts import (
    CountRelease,
    release_binomial_count,
    release_multinomial_counts,
    release_poisson_count,
)
from .expfam import TruncatedSumRelease, release_truncated_sum
from .expfam_normal import (
    TruncatedNormalSumRelease,
    release_truncated_normal_sum,
    truncated_normal_sum_sensitivity,
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
from .regression import (
    PerturbedRelease,
    clip_response,
    perturb_linreg,
    perturb_logreg,
    split_epsilon,
)
from .sufficient import (
    SSRelease,
    linear_ss_sensitivity,
    logistic_ss_sensitivity,
    poisson_ss_sensitivity,
    polynomial_ss_sensitivity,
    release_sufficient_statistics,
    ss_sensitivity,
    sufficient_statistics,
    t2,
)

#: the posterior-release names re-exported from :mod:`pymc_dpnoise.posterior_release` (PEP 562)
_POSTERIOR_RELEASE = (
    "Budget",
    "LinRegModel",
    "Release",
    "exponential_map",
    "fourier_closure",
    "fourier_posterior_updates",
    "laplace_posterior_updates",
    "linreg_sampling_epsilon",
    "posterior_sample",
    "posterior_sample_linreg",
    "posterior_sampling_epsilon",
    "total_spent",
)


def __getattr__(name):
    import importlib

    if name in _POSTERIOR_RELEASE:
        value = getattr(importlib.import_module("..posterior_release", __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "Budget",
    "CountRelease",
    "LinRegModel",
    "PerturbedRelease",
    "Release",
    "SSRelease",
    "TruncatedNormalSumRelease",
    "TruncatedSumRelease",
    "analytic_gaussian_sigma",
    "as_matrix",
    "classical_gaussian_sigma",
    "clip",
    "clip_normalize",
    "clip_response",
    "clip_rows",
    "clipped_sensitivity",
    "compress_reports",
    "exponential_map",
    "fourier_closure",
    "fourier_posterior_updates",
    "gaussian_mechanism",
    "krr_estimate",
    "krr_perturb",
    "krr_probabilities",
    "laplace_mechanism",
    "laplace_posterior_updates",
    "linear_ss_sensitivity",
    "linreg_sampling_epsilon",
    "logistic_ss_sensitivity",
    "oue_estimate",
    "oue_perturb",
    "oue_probabilities",
    "perturb_clipped",
    "perturb_clipped_exponential",
    "perturb_linreg",
    "perturb_logreg",
    "poisson_ss_sensitivity",
    "polynomial_ss_sensitivity",
    "posterior_sample",
    "posterior_sample_linreg",
    "posterior_sampling_epsilon",
    "project_simplex",
    "randomized_response",
    "release_binomial_count",
    "release_multinomial_counts",
    "release_poisson_count",
    "release_sufficient_statistics",
    "release_truncated_normal_sum",
    "release_truncated_sum",
    "split_epsilon",
    "ss_sensitivity",
    "sue_perturb",
    "sue_probabilities",
    "sufficient_statistics",
    "t2",
    "total_spent",
    "truncated_normal_sum_sensitivity",
    "unary_encoding_estimate",
    "unary_encoding_perturb",
]
