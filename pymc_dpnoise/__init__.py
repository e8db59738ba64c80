"""pymc-dpnoise: Bayesian inference on differentially private data with PyMC.

The privacy mechanism that produced the data is put *inside the likelihood*, so posteriors
account for the noise and stay calibrated.

Subpackages
-----------
noise
    Noise as a value: the Laplace, discrete Laplace, rounded Laplace, Gaussian and discrete
    Gaussian noise of real DP systems (OpenDP, Tumult, Google's DP library, the 2020 Census),
    with exact samplers and readers of their releases.
mechanisms
    Release-side NumPy mechanisms (what the data holder or client runs); the posterior-release
    mechanisms are importable here too.
posterior_release
    The Zhang, Rubinstein & Dimitrakakis (AAAI 2016) paper in one place: publishing a posterior
    of a discrete Bayesian network (Laplace and Fourier mechanisms on the count updates,
    posterior sampling, MAP by the exponential mechanism), the network structure
    (:class:`BayesNet`), and the noise-aware reading of a release (PyMC model, exact posterior).
intervals
    Credible intervals for released counts and sums in one call (exact on a grid, no model).
privacy_check
    Empirical privacy checks (largest log-ratio of output frequencies on neighbours).
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
summaries
    Binned summaries of N reports (NumPy, DuckDB files, any dataframe) for O(bins) likelihoods.
datasets
    Loaders for the real data sets shipped with the package, and the papers' feature matrices.
experiments
    The papers' experiments, one module per notebook (imported on demand; nothing in the
    library depends on it).
"""

from importlib.metadata import PackageNotFoundError, version

# The distributions (PyMC, PyTensor) and the mechanisms are imported on first use (PEP 562), so
# ``import pymc_dpnoise`` and ``pymc-dpnoise --help`` stay fast; ``from pymc_dpnoise import X``
# and ``pymc_dpnoise.X`` work as before.
_DISTRIBUTIONS = (
    "KRRLikelihood",
    "LaplaceNoisyBinomial",
    "LaplaceNoisyMultinomial",
    "LaplaceNoisyPoisson",
    "LaplaceNoisyTruncatedExponential",
    "LaplaceNoisyTruncatedNormal",
    "LaplaceNoisyTruncatedPoisson",
    "LaplacePerturbedClippedExponential",
    "LaplacePerturbedClippedExponentialSummary",
    "LaplacePerturbedClippedNormal",
    "LaplacePerturbedClippedNormalSummary",
    "NoisyBinomial",
    "NoisyPoisson",
    "OUELikelihood",
    "PerturbedLinReg",
    "PerturbedLinRegSummary",
    "PerturbedLogReg",
    "SSNormalApprox",
    "SUELikelihood",
    "UnaryEncodingLikelihood",
)

_OTHER = {
    # building blocks that error messages point to (the latent-given forms of the helpers)
    "LaplaceNoisyMultinomialGivenCounts": ".distributions.expfam",
    "LaplaceNoisyMultinomialGivenNoiseVar": ".distributions.expfam",
    "LaplaceNoisyTruncatedNormalGivenSum": ".distributions.expfam_normal",
    "truncated_sum_sensitivity": ".distributions.expfam",
    # what the Laplace-named distributions build for noise=noise.Gaussian(sigma)
    "GaussianNoisyMultinomial": ".distributions.expfam",
    "GaussianNoisyTruncatedExponential": ".distributions.expfam",
    "GaussianNoisyTruncatedNormal": ".distributions.expfam_normal",
    "GaussianNoisyTruncatedPoisson": ".distributions.expfam",
    "BayesNet": ".posterior_release",
    "summarize": ".summaries",
    # perturbed-input logistic regression at any N (no workflow-table row yet)
    "PerturbedLogRegSummary": ".distributions.regression",
    "check_logreg_summary": ".distributions.regression",
    "summarize_logreg": ".summaries",
    "compute_log_likelihood": ".pointwise",
    # noisy sums of clamped values (no workflow-table row yet)
    "NoisySum": ".distributions.sums",
    "loo": ".pointwise",
}


#: the subpackages the docstring lists, each reachable as ``pymc_dpnoise.<name>`` (imported on
#: first use; tests/distributions/test_conventions.py checks the docstring, this tuple and __all__ agree)
SUBPACKAGES = (
    "noise",
    "mechanisms",
    "posterior_release",
    "intervals",
    "privacy_check",
    "math",
    "distributions",
    "priors",
    "diagnostics",
    "baselines",
    "summaries",
    "datasets",
    "experiments",
)


def __getattr__(name):
    import importlib

    if name in _DISTRIBUTIONS:
        value = getattr(importlib.import_module(".distributions", __name__), name)
    elif name in _OTHER:
        value = getattr(importlib.import_module(_OTHER[name], __name__), name)
    elif name in SUBPACKAGES:
        value = importlib.import_module("." + name, __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


try:
    __version__ = version("pymc-dpnoise")
except PackageNotFoundError:  # pragma: no cover
    __version__ = "0+unknown"

__all__ = [*_DISTRIBUTIONS, *_OTHER, "__version__", *SUBPACKAGES]
