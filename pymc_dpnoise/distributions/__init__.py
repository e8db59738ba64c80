"""Noise-aware PyMC distributions of privatised reports.

Each class is a thin PyMC wrapper: the log density comes from :mod:`pymc_dpnoise.math`,
the random draws *are* the release mechanism (so prior and posterior predictive draws are
privatised reports), and constant parameters are validated when the variable is created.

Modules: :mod:`~pymc_dpnoise.distributions.clipped` (clipped Normal and Exponential values
plus Laplace noise, and their binned summaries), :mod:`~pymc_dpnoise.distributions.counts`
(Laplace-noised binomial and Poisson counts), :mod:`~pymc_dpnoise.distributions.noisy_counts`
(binomial and Poisson counts with any noise of :mod:`pymc_dpnoise.noise`, clamped or not), :mod:`~pymc_dpnoise.distributions.frequency`
(frequency oracles: OUE, SUE, unary encoding, k-RR),
:mod:`~pymc_dpnoise.distributions.regression` (perturbed-input linear and logistic
regression) and :mod:`~pymc_dpnoise.distributions.sufficient` (noisy sufficient statistics
of GLMs).

Design note: the draws are :class:`~pymc.distributions.distribution.SymbolicRandomVariable`
graphs of the mechanism (e.g. ``normal -> clip -> + laplace``), not a ``RandomVariable``
with a NumPy ``rng_fn``: a NumPy ``rng_fn`` runs in Numba *object mode* (with a warning)
under PyTensor's default linker and has no JAX implementation, while the symbolic graph runs
natively on every backend.  The NumPy functions in :mod:`pymc_dpnoise.mechanisms` implement
the same mechanisms for data holders, and the test-suite checks that both give the same
distribution.
"""

# ruff: noqa: F401  (re-exports; __all__ is built below from the lists kept with the code)
from .. import _DISTRIBUTIONS
from .clipped import (
    LaplacePerturbedClippedExponential,
    LaplacePerturbedClippedExponentialSummary,
    LaplacePerturbedClippedNormal,
    LaplacePerturbedClippedNormalSummary,
)
from .counts import LaplaceNoisyBinomial, LaplaceNoisyPoisson
from .expfam import (
    GaussianNoisyMultinomial,
    GaussianNoisyTruncatedExponential,
    GaussianNoisyTruncatedPoisson,
    LaplaceNoisyMultinomial,
    LaplaceNoisyMultinomialGivenCounts,
    LaplaceNoisyMultinomialGivenNoiseVar,
    LaplaceNoisyTruncatedExponential,
    LaplaceNoisyTruncatedPoisson,
    truncated_sum_sensitivity,
)
from .expfam_normal import (
    GaussianNoisyTruncatedNormal,
    LaplaceNoisyTruncatedNormal,
    LaplaceNoisyTruncatedNormalGivenSum,
)
from .frequency import (
    KRRLikelihood,
    OUELikelihood,
    SUELikelihood,
    UnaryEncodingLikelihood,
)
from .noisy_counts import NoisyBinomial, NoisyPoisson
from .regression import PerturbedLinReg, PerturbedLinRegSummary, PerturbedLogReg
from .sufficient import SSNormalApprox
from .sums import NoisySum

# the names are listed once, in the package's lazy exports; the building blocks imported above
# (latent-given forms that error messages point to, the Gaussian-noise forms) are importable from here and from the
# package, but are not rows of the workflow table
__all__ = list(_DISTRIBUTIONS)
