"""Old home of the posterior-release mechanisms: now :mod:`pymc_dpnoise.posterior_release`.

The names here are the same objects as there (Algorithms 1 and 2 in
:mod:`~pymc_dpnoise.posterior_release.updates`, posterior sampling and Algorithm 3 in
:mod:`~pymc_dpnoise.posterior_release.sampling`, the :class:`Release` record in
:mod:`~pymc_dpnoise.posterior_release.release`); new code imports from
:mod:`pymc_dpnoise.posterior_release` (or, as before, from :mod:`pymc_dpnoise.mechanisms`).
"""

from ..posterior_release.release import Budget, Release, total_spent
from ..posterior_release.sampling import (
    LinRegModel,
    exponential_map,
    linreg_sampling_epsilon,
    posterior_sample,
    posterior_sample_linreg,
    posterior_sampling_epsilon,
    posterior_sampling_epsilon_of,  # noqa: F401 (still importable here; not in __all__)
)
from ..posterior_release.updates import (
    fourier_closure,
    fourier_posterior_updates,
    laplace_posterior_updates,
)

__all__ = [
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
]
