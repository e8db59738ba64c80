r"""Publishing a posterior under ε-DP: the Zhang, Rubinstein & Dimitrakakis paper in one place.

Zhang, Rubinstein & Dimitrakakis, *On the Differential Privacy of Bayesian Inference* (AAAI
2016).  The paper's side is the data holder's: release a posterior of a discrete Bayesian
network (or of a linear regression) under ε-DP.  This package adds the other side, the
*reader* of such a release, who models the noise (noise-aware posterior).  The experiments
(Figs. 1 and 2, calibration, privacy checks) are in
:mod:`pymc_dpnoise.experiments.posterior_release`; the narrative and the numbers are on the
documentation page "Publishing a posterior".

Where each part of the paper lives
----------------------------------

* Sec. 2.1, Example 1 --- discrete Bayesian network with conjugate Beta / Dirichlet tables and
  the count updates :math:`\Delta\omega` (:math:`\Delta\alpha, \Delta\beta`): :mod:`.network`
  (:class:`.BayesNet`, :func:`.as_bayesnet`).
* Sec. 2.2, Definition 1 --- neighbours (replace-one), the privacy a release spends, basic
  composition: :mod:`.release` (:class:`.Release`, :class:`.Budget`, :func:`.total_spent`).
* Sec. 3.1, Algorithm 1, Lemma 1, Corollary 1 --- Laplace noise on the count updates, clamped
  to :math:`[0, n]`: :mod:`.updates` (:func:`.laplace_posterior_updates`).
* Sec. 3.2, Algorithm 2, Theorem 2, Corollaries 2 and 3 --- Laplace noise on the Fourier
  coefficients, consistent tables, non-negativity shift: :mod:`.updates`
  (:func:`.fourier_posterior_updates`, :func:`.fourier_closure`).
* Sec. 4.1, Lemma 2, Theorem 4, Appendix C.2 --- one draw from a trimmed posterior:
  :mod:`.sampling` (:func:`.posterior_sample`, :func:`.posterior_sampling_epsilon`), with exact
  trimmed Beta / Dirichlet draws in :mod:`._truncated`.
* Sec. 5.2, Appendix D, Lemma D.1 --- posterior sampling for linear regression with a Gaussian
  prior restricted to a ball: :mod:`.sampling` (:func:`.posterior_sample_linreg`,
  :class:`.LinRegModel`, :func:`.linreg_sampling_epsilon`).
* Sec. 4.2, Algorithm 3, Corollary 4 --- MAP by the exponential mechanism: :mod:`.sampling`
  (:func:`.exponential_map`).
* Sec. 5.1 (naive Bayes) read noise-aware (this package's addition, not the paper's) ---
  :mod:`.reader`: :func:`.noise_aware_model` (a PyMC model), :class:`.ExactPosterior` (the same
  posterior as an exact mixture of Betas, no MCMC; it also reads a one-run Algorithm 2 release),
  the paper's plug-in reading :func:`.plugin_posterior`, and :func:`.predict_proba`.
* The likelihood of an Algorithm 1 naive Bayes release (latent counts summed out against the
  clamped-Laplace kernel, exactly or under a normal approximation for large ``n``): :mod:`.math`
  (pure PyTensor: :func:`.naive_bayes_release_logp`, :func:`.naive_bayes_release_logp_normal`).

Corrections to the paper (each documented where it is implemented): Algorithm 2's shift holds
as stated only for large enough ``t`` (a provable ``shift="union"`` is offered); posterior
sampling's ε is :math:`2\sum_i \log((1 - (K_i - 1)\omega_i)/\omega_i)`, not
:math:`2\log(1/\omega)`; Appendix D's Lipschitz constant is replaced by a direct bound;
Algorithm 3 uses the log posterior as utility.

**Layers.** ``network`` needs NumPy only; ``release``, ``updates`` and ``sampling`` are the
release side (NumPy and SciPy, built on the release guard of ``pymc_dpnoise.mechanisms.core``);
``reader`` is the reading side (NumPy, and PyMC when a model is built); ``math`` is the
PyTensor likelihood the reader's model uses.

The mechanisms are importable from :mod:`pymc_dpnoise.mechanisms` too, as the same objects.

.. warning::

   The mechanisms are simulation grade, like the rest of :mod:`pymc_dpnoise.mechanisms`: NumPy
   floating-point noise is not hardened against floating-point attacks, and rejection loops
   take a data-dependent time.
"""

from .math import (
    clamped_laplace_kernel_logp,
    default_points,
    naive_bayes_release_logp,
    naive_bayes_release_logp_normal,
)
from .network import BayesNet, as_bayesnet
from .reader import (
    ExactPosterior,
    NaiveBayesRelease,
    naive_bayes_layout,
    noise_aware_model,
    plugin_posterior,
    predict_proba,
    release_reports,
    simulate_release,
)
from .release import Budget, Release, total_spent
from .sampling import (
    LinRegModel,
    exponential_map,
    linreg_sampling_epsilon,
    posterior_sample,
    posterior_sample_linreg,
    posterior_sampling_epsilon,
)
from .updates import fourier_closure, fourier_posterior_updates, laplace_posterior_updates

__all__ = [
    "BayesNet",
    "Budget",
    "ExactPosterior",
    "LinRegModel",
    "NaiveBayesRelease",
    "Release",
    "as_bayesnet",
    "clamped_laplace_kernel_logp",
    "default_points",
    "exponential_map",
    "fourier_closure",
    "fourier_posterior_updates",
    "laplace_posterior_updates",
    "linreg_sampling_epsilon",
    "naive_bayes_layout",
    "naive_bayes_release_logp",
    "naive_bayes_release_logp_normal",
    "noise_aware_model",
    "plugin_posterior",
    "posterior_sample",
    "posterior_sample_linreg",
    "posterior_sampling_epsilon",
    "predict_proba",
    "release_reports",
    "simulate_release",
    "total_spent",
]
