"""pymc-dpnoise: Bayesian inference on differentially private data with PyMC.

The privacy mechanism that produced the data is put *inside the likelihood*, so posteriors
account for the noise and stay calibrated.

Subpackages
-----------
mechanisms
    Release-side NumPy mechanisms (what the data holder or client runs).
math
    Pure PyTensor log-likelihoods.
distributions
    PyMC distributions (also exported here).
priors
    The scaled LKJ prior on a feature covariance, in a parameterisation NUTS samples well.
diagnostics
    Simulation-based calibration, coverage, KS, MMD, ECDF distance.
baselines
    Comparison methods from the papers (e.g. the noise-ignoring model).
datasets
    Loaders for the real data sets shipped with the package.
"""

from importlib.metadata import PackageNotFoundError, version

from . import mechanisms
from .distributions import (
    KRRLikelihood,
    LaplaceNoisyBinomial,
    LaplaceNoisyPoisson,
    LaplacePerturbedClippedExponential,
    LaplacePerturbedClippedNormal,
    OUELikelihood,
    PerturbedLinReg,
    PerturbedLogReg,
    SSNormalApprox,
    SUELikelihood,
    UnaryEncodingLikelihood,
)

try:
    __version__ = version("pymc-dpnoise")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0+unknown"

__all__ = [
    "KRRLikelihood",
    "LaplaceNoisyBinomial",
    "LaplaceNoisyPoisson",
    "LaplacePerturbedClippedExponential",
    "LaplacePerturbedClippedNormal",
    "OUELikelihood",
    "PerturbedLinReg",
    "PerturbedLogReg",
    "SSNormalApprox",
    "SUELikelihood",
    "UnaryEncodingLikelihood",
    "__version__",
    "mechanisms",
]
