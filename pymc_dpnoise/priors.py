"""Priors for the feature covariance Σ of the regression and sufficient-statistics models.

The LDP and GLM papers put the *scaled LKJ* prior on the covariance of the clean features,
Σ = diag(τ) Ω diag(τ) with Ω ~ LKJ(η) and independent positive scales τ_j.
:func:`scaled_lkj_cov` builds it with τ and Ω as **separate** free variables.

Why not ``pm.LKJCholeskyCov``?  It has the same prior, but NUTS moves in the entries of the
Cholesky factor L of Σ, and a small scale of any row below the first, τ_i = ‖L_i‖, needs all
of that row's entries near zero at once: a funnel that NUTS does not enter.  With noisy
features (where the data say little about τ) this biases the posterior of τ_i away from zero;
simulation-based calibration of :class:`~pymc_dpnoise.PerturbedLogReg` found the 90% interval
of τ₁ covering 0.80 and 0.79 (ε = 0.5, 2) against a band of [0.82, 0.97], and of
:class:`~pymc_dpnoise.PerturbedLinReg` 0.81 (second seed); a prior-only NUTS run of
``LKJCholeskyCov`` puts too little mass near zero in the second scale
(``benchmarks/lkj_parameterisation.py``).  Here τ_j moves on the log scale and Ω through
PyMC's ``LKJCorr`` transform, so every scale reaches zero alike.
"""

from __future__ import annotations

import numpy as np

__all__ = ["lkj_corr_draw", "scaled_lkj_cov"]


def scaled_lkj_cov(name, n, *, eta=2.0, tau_sigma=1.0, tau=None, dims=None):
    r"""Scaled LKJ prior Σ = diag(τ) Ω diag(τ) with τ and Ω sampled separately.

    Creates, inside the current model, ``{name}_tau`` (τ_j ~ HalfNormal(``tau_sigma``), unless
    ``tau`` is given) and ``{name}_corr`` (the Cholesky factor of Ω ~ LKJ(``eta``), PyMC's
    ``LKJCorr``).

    .. math::

        \Sigma = \operatorname{diag}(\tau)\,\Omega\,\operatorname{diag}(\tau),\qquad
        \Omega \sim \mathrm{LKJ}(\eta),\qquad \tau_j \sim \mathrm{HalfNormal}(s)

    Parameters
    ----------
    name : str
        Prefix of the model variables.
    n : int
        Dimension of Σ (n ≥ 2; for n = 1 use a scale prior directly).
    eta : float
        LKJ shape (η > 0; the papers use 2).
    tau_sigma : float or array_like
        Scale of the half-normal prior on each τ_j (ignored when ``tau`` is given).
    tau : TensorVariable, optional
        Your own positive scale vector of length n (any prior, or data).
    dims : str, optional
        Coordinate name of the n features, given to ``{name}_tau``.

    Returns
    -------
    chol : TensorVariable
        Lower-triangular Cholesky factor of Σ, ``diag(τ) @ L_Ω`` (use
        ``cov = chol @ chol.T``).
    tau : TensorVariable
        The scale vector (standard deviations of the features).
    corr_chol : TensorVariable
        Cholesky factor of Ω.

    Notes
    -----
    ``{name}_corr`` is stored in the trace as the full Cholesky factor, whose first diagonal
    entry is 1 and upper triangle 0 in every draw: ArviZ's R-hat of those fixed entries is
    ``nan``, and NumPy warns about the zero variance when it is computed.  Leave it out with
    ``pm.sample(var_names=[...])`` when only the other variables are wanted.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_dpnoise.priors import scaled_lkj_cov
    >>> with pm.Model() as model:
    ...     chol, tau, _ = scaled_lkj_cov("x", 3, eta=2.0, tau_sigma=2.5)
    ...     cov = pm.Deterministic("cov", chol @ chol.T)
    >>> draw = pm.draw(cov, random_seed=1)
    >>> draw.shape, bool(np.all(np.linalg.eigvalsh(draw) > 0))
    ((3, 3), True)
    """
    import pymc as pm

    if not isinstance(n, int | np.integer) or n < 2:
        raise ValueError(f"`n` must be an integer >= 2, got {n!r}")
    if not np.all(np.asarray(eta, dtype=float) > 0):
        raise ValueError(f"`eta` must be positive, got {eta!r}")
    if tau is None:
        if not np.all(np.asarray(tau_sigma, dtype=float) > 0):
            raise ValueError(f"`tau_sigma` must be positive, got {tau_sigma!r}")
        size = {"dims": dims} if dims is not None else {"shape": n}
        tau = pm.HalfNormal(f"{name}_tau", sigma=tau_sigma, **size)
    corr_chol = pm.LKJCorr(f"{name}_corr", n=n, eta=eta)
    chol = tau[:, None] * corr_chol
    return chol, tau, corr_chol


def lkj_corr_draw(rng: np.random.Generator, d: int, eta: float = 2.0) -> np.ndarray:
    """One LKJ(η) correlation matrix drawn in NumPy by the onion method.

    Lewandowski, Kurowicka & Joe (2009), §3.2: grow the matrix one row at a time, each new
    correlation vector a Beta-distributed radius times a uniform direction.  Used to simulate
    feature covariances from the prior of :func:`scaled_lkj_cov` (SBC, synthetic data).

    Examples
    --------
    >>> import numpy as np
    >>> R = lkj_corr_draw(np.random.default_rng(0), 3)
    >>> bool(np.allclose(np.diag(R), 1.0) and np.all(np.linalg.eigvalsh(R) > 0))
    True
    """
    if d == 1:
        return np.ones((1, 1))
    beta = eta + (d - 2) / 2.0
    r12 = 2.0 * rng.beta(beta, beta) - 1.0
    R = np.array([[1.0, r12], [r12, 1.0]])
    for k in range(2, d):
        beta -= 0.5
        y = rng.beta(k / 2.0, beta)
        u = rng.normal(size=k)
        u /= np.linalg.norm(u)
        w = np.sqrt(y) * u
        A = np.linalg.cholesky(R)
        z = A @ w
        R = np.block([[R, z[:, None]], [z[None, :], np.ones((1, 1))]])
    return R
