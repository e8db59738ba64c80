"""Old home of the posterior-release reader: now :mod:`pymc_dpnoise.posterior_release.reader`.

The names here are the same objects as there; new code imports from
:mod:`pymc_dpnoise.posterior_release`, where the whole Zhang, Rubinstein & Dimitrakakis
(AAAI 2016) paper lives.
"""

from .posterior_release.reader import (
    NORMAL_MIN_SCALE,  # noqa: F401 (still importable here; not in __all__)
    ExactPosterior,
    NaiveBayesRelease,
    naive_bayes_layout,
    noise_aware_model,
    plugin_posterior,
    predict_proba,
    release_reports,
    simulate_release,
)

__all__ = [
    "ExactPosterior",
    "NaiveBayesRelease",
    "naive_bayes_layout",
    "noise_aware_model",
    "plugin_posterior",
    "predict_proba",
    "release_reports",
    "simulate_release",
]
