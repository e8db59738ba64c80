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
    Loaders for the real data sets shipped with the package, and the papers' feature matrices.
experiments
    The papers' experiments, one module per notebook (imported on demand; nothing in the
    library depends on it).
"""

from importlib.metadata import PackageNotFoundError, version

from . import distributions, mechanisms
from .distributions import *  # noqa: F403 (the distribution classes, see distributions.__all__)

try:
    __version__ = version("pymc-dpnoise")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0+unknown"

__all__ = ["__version__", "mechanisms"]
__all__ += distributions.__all__
