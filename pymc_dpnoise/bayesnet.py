"""Old home of the Bayesian-network structure: now :mod:`pymc_dpnoise.posterior_release.network`.

The names here are the same objects as there (``pymc_dpnoise.bayesnet.BayesNet is
pymc_dpnoise.posterior_release.BayesNet``); new code imports from
:mod:`pymc_dpnoise.posterior_release`, where the whole Zhang, Rubinstein & Dimitrakakis
(AAAI 2016) paper lives.
"""

from .posterior_release.network import BayesNet, as_bayesnet

__all__ = ["BayesNet", "as_bayesnet"]
