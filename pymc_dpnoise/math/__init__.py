r"""Pure PyTensor log-likelihoods of privatised reports.

Every function here takes and returns PyTensor expressions (or anything
:func:`pytensor.tensor.as_tensor_variable` accepts), uses only elementwise ops
with C, Numba and JAX implementations (``erfcx``, ``erfc``, ``log1mexp``,
``log1p``, ...), broadcasts over all of its arguments, and knows nothing about
PyMC.  The PyMC classes in :mod:`pymc_dpnoise.distributions` are thin wrappers
around them.

Numerical conventions
---------------------
* Nothing is ever exponentiated outside a log: every closed form of the papers
  is rewritten as a log-sum-exp of terms that are finite for all finite inputs.
* Branches are selected with the "double where" pattern: the branch that is not
  taken is evaluated at a safe dummy argument, so that neither its value nor its
  gradient can be ``nan`` or ``inf`` (``switch`` differentiates both branches).
"""

# ruff: noqa: F401  (re-exports; __all__ is built below from the lists kept with the code)
from . import (
    _special,
    clipped,
    counts,
    expfam,
    expfam_normal,
    frequency,
    regression,
    sufficient,
)
from ._special import (
    log_binom_cdf_ratio,
    log_binom_pmf,
    log_poisson_cdf_ratio,
    log_poisson_pmf,
)
from .clipped import (
    _tilted_tails,  # (documented in the API page, not in __all__)
    clipped_exponential_laplace_log_cdfs,
    clipped_exponential_laplace_logp,
    clipped_exponential_summary_error_bound,
    clipped_exponential_summary_logp,
    clipped_normal_laplace_log_cdfs,
    clipped_normal_laplace_logp,
    clipped_normal_summary_error_bound,
    clipped_normal_summary_logp,
    clipped_summary_derivatives,
    log_exprel,
    log_ndtr,
    log_tilted_interval,
    log_tilted_ndtr,
)
from .counts import (
    binomial_laplace_log_cdfs,
    binomial_laplace_logp,
    clamped_binomial_laplace_log_cdfs,
    clamped_binomial_laplace_logp,
    log_tilted_binomial_mgf,
    poisson_laplace_log_cdfs,
    poisson_laplace_logp,
)
from .expfam import (
    multinomial_counts_from_normal,
    multinomial_laplace_logp,
    multinomial_normal_mixture_logp,
    normal_laplace_logp,
    truncated_exponential_moments,
    truncated_poisson_moments,
    truncated_sum_clt,
    truncated_sum_gaussian_logp,
    truncated_sum_laplace_logp,
)
from .expfam_normal import (
    truncated_normal_moments,
    truncated_normal_sum_clt,
    truncated_normal_sum_gaussian_logp,
    truncated_normal_sum_laplace_logp,
)
from .frequency import (
    bits_dot,
    krr_logp,
    log1p_expm1_times,
    oue_logp,
    sue_logp,
    unary_encoding_logp,
)
from .regression import (
    chebyshev_sigmoid_coefficients,
    chebyshev_sigmoid_monomials,
    expected_sigmoid,
    expected_sigmoid_chebyshev,
    gaussian_moments,
    mvnormal_rows_logp,
    perturbed_linreg_cov,
    perturbed_linreg_logp,
    perturbed_logreg_logp,
)
from .sufficient import (
    logistic_taylor_coefficients,
    mvnormal_logp_chol,
    ss_moments,
    ss_normal_approx_logp,
    stat_dim,
    stat_names,
    t2_indices,
)

#: the public functions of every submodule, but for two helpers documented in their own modules
__all__ = sorted(
    {
        *_special.__all__,
        *clipped.__all__,
        *counts.__all__,
        *expfam.__all__,
        *expfam_normal.__all__,
        *frequency.__all__,
        *regression.__all__,
        *sufficient.__all__,
    }
    - {"summary_bin_centres", "GLMS"}
)
