"""Old home of the naive Bayes release likelihood: now :mod:`pymc_dpnoise.posterior_release.math`.

The names here are the same objects as there; new code imports from
:mod:`pymc_dpnoise.posterior_release.math`, in the subpackage of the Zhang, Rubinstein &
Dimitrakakis (AAAI 2016) paper.
"""

from ..posterior_release.math import (
    clamped_laplace_kernel_logp,
    default_points,
    naive_bayes_release_logp,
    naive_bayes_release_logp_normal,
)

__all__ = [
    "clamped_laplace_kernel_logp",
    "default_points",
    "naive_bayes_release_logp",
    "naive_bayes_release_logp_normal",
]
