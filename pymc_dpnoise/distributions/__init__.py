"""Noise-aware PyMC distributions of privatised reports.

Each class is a thin PyMC wrapper: the log density comes from :mod:`pymc_dpnoise.math`,
the random draws *are* the release mechanism (so prior and posterior predictive draws are
privatised reports), and constant parameters are validated when the variable is created.

Design note: the draws are :class:`~pymc.distributions.distribution.SymbolicRandomVariable`
graphs (``normal -> clip -> + laplace``) instead of a ``RandomVariable`` with a NumPy
``rng_fn``.  A NumPy ``rng_fn`` runs in Numba *object mode* (with a warning) under PyTensor's
default linker and has no JAX implementation; the symbolic graph runs natively on every
backend.  The NumPy functions in :mod:`pymc_dpnoise.mechanisms` implement the same
mechanism for data holders, and the test-suite checks that both give the same distribution.
"""

from .clipped import (
    LaplacePerturbedClippedExponential,
    LaplacePerturbedClippedExponentialSummary,
    LaplacePerturbedClippedNormal,
    LaplacePerturbedClippedNormalSummary,
)
from .counts import LaplaceNoisyBinomial, LaplaceNoisyPoisson
from .frequency import (
    KRRLikelihood,
    OUELikelihood,
    SUELikelihood,
    UnaryEncodingLikelihood,
)
from .regression import PerturbedLinReg, PerturbedLinRegSummary, PerturbedLogReg
from .sufficient import SSNormalApprox

__all__ = [
    "KRRLikelihood",
    "LaplaceNoisyBinomial",
    "LaplaceNoisyPoisson",
    "LaplacePerturbedClippedExponential",
    "LaplacePerturbedClippedExponentialSummary",
    "LaplacePerturbedClippedNormal",
    "LaplacePerturbedClippedNormalSummary",
    "OUELikelihood",
    "PerturbedLinReg",
    "PerturbedLinRegSummary",
    "PerturbedLogReg",
    "SSNormalApprox",
    "SUELikelihood",
    "UnaryEncodingLikelihood",
]
