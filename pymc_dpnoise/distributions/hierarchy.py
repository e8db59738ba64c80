r"""Pooled histograms: one item distribution per group under a shared hyper-prior.

Local-DP frequency reports (OUE, SUE, k-RR) from several groups (regions, cohorts) are
usually analysed with partial pooling: each group ``g`` has its own item probabilities
:math:`\theta_g`, drawn around a shared one.  The textbook way to write it, a centred
hierarchical Dirichlet

.. math::

    \beta \sim \mathrm{Dirichlet}(1),\quad \kappa \sim \mathrm{Gamma}(2, 0.05),\quad
    \theta_g \sim \mathrm{Dirichlet}(\kappa\beta),

is a funnel for NUTS when the groups differ (small :math:`\kappa`): the scale of every
:math:`\theta_g` depends on :math:`\kappa`, and with items of small probability the
concentrations :math:`\kappa\beta_j` fall below one, where the simplex transform's density
piles up at the boundary.  Both nutpie and PyMC's sampler then mix slowly (a few dozen
effective draws out of thousands, R-hat well above 1.01).

:func:`pooled_histogram` builds instead a **non-centred logistic-normal** hierarchy, in which
the sampler moves in standard-normal coordinates whatever the spread between groups:

.. math::

    \mu \sim \mathrm{ZeroSumNormal}(\sigma_\mu),\quad \tau \sim \mathrm{HalfNormal}(\sigma_\tau),
    \quad z_g \sim \mathrm{ZeroSumNormal}(1),\quad
    \theta_g = \operatorname{softmax}(\mu + \tau z_g).

The zero-sum constraints remove the one direction of the logits that the softmax ignores.
The centred Dirichlet is kept as ``parameterisation="dirichlet"`` for comparison
(``benchmarks/pooled.py`` measures both).

The likelihood is the package's own (:class:`~pymc_dpnoise.OUELikelihood`,
:class:`~pymc_dpnoise.SUELikelihood` or :class:`~pymc_dpnoise.KRRLikelihood`) on the distinct
(group, report) pairs with their counts, which is the same log-likelihood as one term per
report at a cost of at most ``min(N, G * 2**k)`` terms.
"""

from __future__ import annotations

import numpy as np

from ..validation import check_finite, check_positive

__all__ = [
    "LIKELIHOODS",
    "PARAMETERISATIONS",
    "compress_group_reports",
    "histogram_hierarchy",
    "pooled_histogram",
]

#: the hierarchies :func:`histogram_hierarchy` builds
PARAMETERISATIONS = ("logistic-normal", "dirichlet")
#: the report kinds :func:`pooled_histogram` reads -> (likelihood class name, bit reports)
LIKELIHOODS = {
    "oue": ("OUELikelihood", True),
    "sue": ("SUELikelihood", True),
    "krr": ("KRRLikelihood", False),
}


def histogram_hierarchy(
    name,
    n_groups,
    k,
    *,
    parameterisation="logistic-normal",
    mu_sigma=2.0,
    tau_sigma=1.0,
    kappa_prior=(2.0, 0.05),
):
    r"""Per-group item probabilities ``(n_groups, k)`` under a shared hyper-prior.

    Adds the hierarchy to the current model and returns :math:`\theta`, shape
    ``(n_groups, k)`` (also stored as ``{name}_theta``, a deterministic for the
    logistic-normal hierarchy, a free ``Dirichlet`` for the centred one).  Use it with any
    likelihood of the groups' data, e.g. a naive ``pm.Multinomial`` on estimated counts, so
    that two models of the same groups differ only in their likelihood.

    Parameters
    ----------
    name : str
        Prefix of the variables created.
    n_groups, k : int
        Number of groups and of items (``k >= 2``).
    parameterisation : {"logistic-normal", "dirichlet"}
        ``"logistic-normal"`` (default): ``{name}_mu`` ~ ZeroSumNormal(``mu_sigma``) global
        logits, ``{name}_tau`` ~ HalfNormal(``tau_sigma``) spread between groups,
        ``{name}_z`` ~ ZeroSumNormal(1) of shape ``(n_groups, k)`` (zero sum over items) and
        ``{name}_theta = softmax(mu + tau * z)``; ``{name}_global = softmax(mu)`` is the
        typical group.  ``"dirichlet"``: the centred ``{name}_beta`` ~ Dirichlet(1),
        ``{name}_kappa`` ~ Gamma(``kappa_prior``) (shape, rate), ``{name}_theta`` ~
        Dirichlet(kappa * beta), which NUTS samples poorly when the groups differ.
    mu_sigma, tau_sigma : float
        Prior scales of the global logits and of the between-group spread (logistic-normal).
    kappa_prior : (float, float)
        Shape and rate of the Gamma prior on the concentration (dirichlet).

    Returns
    -------
    TensorVariable
        :math:`\theta`, shape ``(n_groups, k)``, rows on the simplex.

    Examples
    --------
    >>> import pymc as pm
    >>> from pymc_dpnoise.distributions.hierarchy import histogram_hierarchy
    >>> with pm.Model() as model:
    ...     theta = histogram_hierarchy("h", 3, 4)
    >>> sorted(v.name for v in model.free_RVs)
    ['h_mu', 'h_tau', 'h_z']
    >>> theta.eval().sum(axis=-1).round(6).tolist()
    [1.0, 1.0, 1.0]
    """
    import pymc as pm
    import pytensor.tensor as pt

    n_groups, k = _positive_int("n_groups", n_groups, 1), _positive_int("k", k, 2)
    if parameterisation == "logistic-normal":
        check_positive("mu_sigma", mu_sigma)
        check_positive("tau_sigma", tau_sigma)
        mu = pm.ZeroSumNormal(f"{name}_mu", sigma=mu_sigma, shape=k)
        tau = pm.HalfNormal(f"{name}_tau", sigma=tau_sigma)
        z = pm.ZeroSumNormal(f"{name}_z", sigma=1.0, shape=(n_groups, k))
        pm.Deterministic(f"{name}_global", pt.special.softmax(mu, axis=-1))
        return pm.Deterministic(f"{name}_theta", pt.special.softmax(mu + tau * z, axis=-1))
    if parameterisation == "dirichlet":
        shape, rate = kappa_prior
        check_positive("kappa_prior", np.asarray([shape, rate], dtype=float))
        beta = pm.Dirichlet(f"{name}_beta", np.ones(k))
        kappa = pm.Gamma(f"{name}_kappa", alpha=shape, beta=rate)
        return pm.Dirichlet(f"{name}_theta", kappa * beta, shape=(n_groups, k))
    raise ValueError(
        f"`parameterisation` must be one of {PARAMETERISATIONS}; got {parameterisation!r}"
    )


def _positive_int(arg, value, least):
    v = np.asarray(value)
    if v.ndim or not np.issubdtype(v.dtype, np.integer) or int(v) < least:
        raise ValueError(f"`{arg}` must be an integer >= {least}; got {value!r}")
    return int(v)


def compress_group_reports(reports, group, *, bits):
    """Distinct (group, report) pairs of ``reports`` and how often each occurs.

    Returns ``(group_of_row, rows, counts)``: ``rows`` are bit vectors ``(M, k)`` (``bits``)
    or items ``(M,)``, ``counts`` sums to the number of reports.

    Examples
    --------
    >>> g, rows, c = compress_group_reports([1, 0, 1, 1], [0, 1, 1, 1], bits=False)
    >>> g.tolist(), rows.tolist(), c.tolist()
    ([0, 1, 1], [1, 0, 1], [1.0, 1.0, 2.0])
    """
    z = np.asarray(reports)
    g = np.asarray(group)
    key = np.column_stack([g, z.reshape(len(z), -1)])
    uniq, counts = np.unique(key, axis=0, return_counts=True)
    rows = uniq[:, 1:] if bits else uniq[:, 1]
    return uniq[:, 0], rows.astype(z.dtype, copy=False), counts.astype(np.float64)


def pooled_histogram(
    name,
    reports,
    group,
    k=None,
    *,
    epsilon,
    likelihood="oue",
    n_groups=None,
    parameterisation="logistic-normal",
    **hierarchy,
):
    r"""Partially pooled histograms of local-DP reports from several groups.

    Adds to the current model the hierarchy of :func:`histogram_hierarchy` (by default the
    non-centred logistic-normal one, which NUTS samples well whether the groups are alike or
    not) and the noise-aware likelihood of the reports, observed as ``name``.  Identical
    (group, report) pairs are grouped first (the likelihood's ``counts``), so the gradient
    costs at most ``G * 2**k`` terms for bit reports and ``G * k`` for k-RR, whatever ``N``.

    Parameters
    ----------
    name : str
        Name of the observed variable; the hierarchy's variables are ``{name}_mu``,
        ``{name}_tau``, ``{name}_z``, ``{name}_theta`` (per group) and ``{name}_global``.
    reports : array_like
        The released reports: bit vectors ``(N, k)`` for ``"oue"`` / ``"sue"``, items in
        ``[0, k)`` ``(N,)`` for ``"krr"``.
    group : array_like of int, shape (N,)
        Group of each report, in ``[0, n_groups)``.
    k : int, optional
        Number of items; read from the reports' width for bit reports, required for k-RR.
    epsilon : float or array_like, shape (n_groups,)
        Privacy budget of the reports, one for all or one per group.
    likelihood : {"oue", "sue", "krr"}
        The mechanism that produced the reports.
    n_groups : int, optional
        Number of groups (default ``max(group) + 1``); groups without reports get the
        hierarchy's prior.
    parameterisation : {"logistic-normal", "dirichlet"}
        See :func:`histogram_hierarchy`; further keyword arguments go there too.

    Returns
    -------
    TensorVariable
        The per-group item probabilities ``{name}_theta``, shape ``(n_groups, k)``.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pymc_dpnoise.distributions.hierarchy import pooled_histogram
    >>> from pymc_dpnoise.mechanisms import oue_perturb
    >>> rng = np.random.default_rng(0)
    >>> group = np.repeat(np.arange(3), 400)                  # 3 regions x 400 people
    >>> items = rng.choice(4, size=group.size, p=[0.4, 0.3, 0.2, 0.1])
    >>> reports = oue_perturb(items, 4, 1.0, rng)
    >>> with pm.Model() as model:
    ...     theta = pooled_histogram("z", reports, group, epsilon=1.0)
    >>> theta.eval().shape
    (3, 4)
    >>> bool(np.isfinite(model.compile_logp()(model.initial_point())))
    True
    """

    from . import frequency

    if likelihood not in LIKELIHOODS:
        raise ValueError(f"`likelihood` must be one of {tuple(LIKELIHOODS)}; got {likelihood!r}")
    cls_name, bits = LIKELIHOODS[likelihood]
    z = np.asarray(reports)
    check_finite("reports", z)
    g = np.asarray(group)
    if z.ndim != (2 if bits else 1):
        raise ValueError(
            f"`reports` of {likelihood!r} must have shape {'(N, k)' if bits else '(N,)'}; "
            f"got {z.shape}"
        )
    if g.shape != (len(z),) or not np.issubdtype(g.dtype, np.integer):
        raise ValueError(f"`group` must be {len(z)} integers, one per report; got shape {g.shape}")
    if len(g) and g.min() < 0:
        raise ValueError(f"`group` must be >= 0; got {g.min()}")
    if bits:
        k = z.shape[1] if k is None else _positive_int("k", k, 2)
        if z.shape[1] != k:
            raise ValueError(f"`k` = {k} but the bit `reports` have {z.shape[1]} columns")
    elif k is None:
        raise ValueError("`k` (the number of items) is required for 'krr' reports")
    k = _positive_int("k", k, 2)
    n_groups = int(g.max()) + 1 if n_groups is None else _positive_int("n_groups", n_groups, 1)
    if len(g) and g.max() >= n_groups:
        raise ValueError(f"`group` must be < n_groups = {n_groups}; got {g.max()}")
    eps = np.asarray(epsilon, dtype=float)
    if eps.ndim and eps.shape != (n_groups,):
        raise ValueError(
            f"`epsilon` must be a scalar or one budget per group ({n_groups},); got {eps.shape}"
        )
    theta = histogram_hierarchy(name, n_groups, k, parameterisation=parameterisation, **hierarchy)
    gi, rows, counts = compress_group_reports(z, g, bits=bits)
    getattr(frequency, cls_name)(
        name, p=theta[gi], epsilon=eps[gi] if eps.ndim else eps, counts=counts, observed=rows
    )
    return theta
