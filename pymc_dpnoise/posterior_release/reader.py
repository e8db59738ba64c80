r"""Reading a posterior release: noise-aware and plug-in posteriors of a naive Bayes release.

Whoever *receives* an Algorithm 1 release
(:func:`pymc_dpnoise.posterior_release.updates.laplace_posterior_updates`) of a naive Bayes
model has two readings:

* **plug-in** (the paper's): treat the released counts as exact, posterior
  :math:`\mathrm{Beta}(a + z_{\cdot,1}, b + z_{\cdot,0})` for every row
  (:func:`plugin_posterior`);
* **noise-aware**: a PyMC model whose latent true counts are the sufficient statistics and
  whose observations are the release (:func:`noise_aware_model`).  The latent counts are summed
  out exactly (:func:`pymc_dpnoise.posterior_release.math.naive_bayes_release_logp`,
  :math:`O(Fn^2)` per evaluation) for ``n <= exact_max`` (default 400) or a Laplace scale below
  4 counts, and otherwise with a normal approximation of the latent counts
  (:func:`pymc_dpnoise.posterior_release.math.naive_bayes_release_logp_normal`, cost
  independent of ``n``).

:class:`ExactPosterior` is the same noise-aware posterior without MCMC: given the latent
counts the Beta priors are conjugate, so the posterior is a finite mixture of Beta
distributions whose weights are computed exactly in NumPy (:math:`O(Fn^2)` once per release).
It gives exact posterior CDFs (for SBC) and the exact posterior predictive.

:func:`predict_proba` turns posterior draws (or plug-in parameters) into predictive class
probabilities for test records.

:class:`ExactPosterior` also reads a one-run Algorithm 2 release of naive Bayes
(:func:`pymc_dpnoise.posterior_release.updates.fourier_posterior_updates`): its noise is on
the parity sums, which for naive Bayes are functions of the same latent counts
(:math:`O(Fn^3)`, ``n <= 100``).
"""

from __future__ import annotations

import numpy as np

from .network import BayesNet

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


class NaiveBayesRelease:
    """The parts of an Algorithm 1 naive Bayes release a reader needs (all public).

    Attributes: ``reports`` (flat vector, :func:`release_reports` layout), ``n``, ``scale``
    (Laplace scale of every cell), ``class_column``, ``features`` (feature columns, in order).
    """

    def __init__(self, reports, n, scale, class_column=0, features=None):
        from ..mechanisms.core import check_privacy_parameter

        if isinstance(n, bool) or not (
            isinstance(n, int | np.integer)
            or (isinstance(n, float | np.floating) and np.isfinite(n) and n == int(n))
        ):
            raise TypeError(f"`n` (the number of records) must be an integer; got {n!r}")
        if n < 1:
            raise ValueError(f"`n` (the number of records) must be >= 1; got {n!r}")
        self.n = int(n)
        self.scale = float(check_privacy_parameter("scale", scale, "positive"))
        try:
            self.reports = np.asarray(reports, dtype=float)
        except (TypeError, ValueError):
            raise TypeError("`reports` must be a vector of numbers") from None
        if self.reports.ndim != 1:
            raise ValueError(f"`reports` must be a vector; got shape {self.reports.shape}")
        bad = ~np.isfinite(self.reports) | (self.reports < 0) | (self.reports > self.n)
        if np.any(bad):
            raise ValueError(
                f"`reports` must be finite and in [0, n] = [0, {self.n}] (Algorithm 1 clamps "
                f"every cell there); {int(bad.sum())} are not, first at index "
                f"{int(np.argmax(bad))}: {self.reports[bad][:3]}"
            )
        self.class_column = int(class_column)
        f = (len(self.reports) - 2) // 4
        if len(self.reports) != 2 + 4 * f or f < 1:
            raise ValueError(
                f"`reports` must have length 2 + 4F (F >= 1 features); got {len(self.reports)}"
            )
        self.features = tuple(features) if features is not None else tuple(range(1, f + 1))
        self.n_features = f


def naive_bayes_layout(structure) -> tuple[int, tuple[int, ...]]:
    """``(class column, feature columns)`` of a naive Bayes structure; ``ValueError`` otherwise.

    Naive Bayes here: binary nodes, exactly one node without parents (the class), every other
    node with the class as its only parent.
    """
    net = structure if isinstance(structure, BayesNet) else BayesNet.from_parents(structure)
    roots = [i for i, ps in enumerate(net.parents) if not ps]
    if not net.is_binary or len(roots) != 1 or net.n_nodes < 2:
        raise ValueError(
            "`release` must be of a binary naive Bayes network (one class node without parents, "
            f"every other node with the class as sole parent); got parents {net.parents} and "
            f"cardinalities {net.cardinality}"
        )
    c = roots[0]
    feats = tuple(i for i in range(net.n_nodes) if i != c)
    if any(net.parents[i] != (c,) for i in feats):
        raise ValueError(
            "`release` must be of a naive Bayes network (every feature's only parent is the "
            f"class node {c}); got parents {net.parents}"
        )
    return c, feats


def _as_reader(release) -> NaiveBayesRelease:
    if isinstance(release, NaiveBayesRelease):
        return release
    mech = getattr(release, "mechanism", None)
    if mech != "laplace_updates":
        raise ValueError(
            "`release` must be an Algorithm 1 release "
            "(posterior_release.laplace_posterior_updates, mechanism 'laplace_updates'); "
            f"got mechanism {mech!r}"
        )
    return NaiveBayesRelease(
        release_reports(release),
        release.metadata["n"],
        release.metadata["scale"],
        *naive_bayes_layout(release.metadata["structure"]),
    )


class _FourierRelease:
    """The parity sums of an Algorithm 2 naive Bayes release that carry information."""

    def __init__(self, release):
        if release.metadata.get("max_tries") != 1:
            raise ValueError(
                "`release` made with re-runs (max_tries other than 1) is conditioned on "
                "non-negativity; only single-run Algorithm 2 releases are read"
            )
        c, feats = naive_bayes_layout(release.metadata["structure"])
        pos = {g: i for i, g in enumerate(release.metadata["closure"])}
        coef = np.asarray(release.metadata["coefficients"], dtype=float)
        self.n = int(release.metadata["n"])
        if self.n > 100:
            raise ValueError(
                f"`release` has n = {self.n} records; the exact Algorithm 2 reader costs "
                "O(F n^3) time and memory and is limited to n <= 100"
            )
        self.scale = float(release.metadata["scale"])
        self.n_features = len(feats)
        self.reports = None
        self.coef_class = coef[pos[(c,)]]
        self.coef_feature = coef[[pos[(f,)] for f in feats]]
        self.coef_pair = coef[[pos[tuple(sorted((c, f)))] for f in feats]]


def _fourier_reader(release) -> _FourierRelease:
    return _FourierRelease(release)


def release_reports(release) -> np.ndarray:
    """The released cells of an Algorithm 1 naive Bayes release as one flat vector.

    ``[z_class,0, z_class,1, then for every feature (in column order) its (2, 2) table
    (row = class, column = value) flattened]``: length ``2 + 4F``.
    """
    c, feats = naive_bayes_layout(release.metadata["structure"])
    v = release.values
    return np.concatenate([np.ravel(v[c])] + [np.ravel(v[f]) for f in feats]).astype(float)


def _beta_prior(prior) -> tuple[float, float]:
    if np.ndim(prior) == 0:
        a = b = float(prior)
    else:
        try:
            a, b = (float(x) for x in prior)
        except (TypeError, ValueError):
            raise ValueError(
                f"`prior` must be a concentration or a pair (a, b); got {prior!r}"
            ) from None
    if not (np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0):
        raise ValueError(f"`prior` concentrations must be finite and > 0; got ({a}, {b})")
    return a, b


#: ``method="auto"`` of :func:`noise_aware_model` uses the normal approximation only where the
#: Laplace scale is at least this many counts (and ``n > exact_max``)
NORMAL_MIN_SCALE = 4.0


def noise_aware_model(release, prior=1.0, *, method: str = "auto", exact_max: int = 400):
    r"""PyMC model of the naive Bayes parameters given an Algorithm 1 release.

    Variables: ``theta_class`` (:math:`\pi = P(Y = 1)`) and ``theta`` (shape ``(F, 2)``,
    :math:`\theta_{f,c} = P(X_f = 1 \mid Y = c)`), independent Beta(``prior``) priors; the
    release is the observed variable ``"release"`` (a ``pm.CustomDist``, dims ``"cell"``) with
    the exact likelihood of :mod:`pymc_dpnoise.posterior_release.math` (latent class count and
    per-class feature counts summed out, each cell a count plus Laplace noise clamped to
    :math:`[0, n]`).
    Its draws are the mechanism itself (n records from the naive Bayes model, their counts,
    Laplace noise, the clamp), so prior and posterior predictive draws are releases.  The
    released vector is the ``pm.Data`` container ``"reports"``, so a compiled model can be
    re-used for another release of the same shape.

    Parameters
    ----------
    release : Release or NaiveBayesRelease
        An output of :func:`pymc_dpnoise.posterior_release.updates.laplace_posterior_updates` on
        a naive Bayes structure.
    prior : float or (float, float)
        Beta(a, b) prior of every probability (a scalar: a = b); 1 = uniform, as in the paper.
    method : {"auto", "exact", "normal"}
        ``"exact"``: the exact nested sum, :math:`O(F n^2)` per evaluation; ``"normal"``: the
        normal approximation of the latent counts (cost independent of ``n``); ``"auto"``:
        normal where ``n > exact_max`` and the Laplace scale is at least
        ``NORMAL_MIN_SCALE`` = 4 counts (there the log-likelihood differences it gives are
        within 0.3 nats of the exact ones near the truth), exact otherwise (below a few counts
        the release is peaked at integers, which the approximation ignores: n = 401, scale
        0.06 was off by 3.6 nats).
    exact_max : int
        The threshold of ``"auto"``.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_dpnoise.posterior_release import BayesNet, laplace_posterior_updates
    >>> rng = np.random.default_rng(0)
    >>> net = BayesNet.naive_bayes(2)
    >>> x = net.sample_data(net.sample_parameters(1.0, rng), 30, rng)
    >>> rel = laplace_posterior_updates(x, net, 1.0, rng)
    >>> model = noise_aware_model(rel)
    >>> sorted(model.named_vars)
    ['release', 'reports', 'theta', 'theta_class']
    """
    import pymc as pm

    from .math import naive_bayes_release_logp, naive_bayes_release_logp_normal

    rd = _as_reader(release)
    a, b = _beta_prior(prior)
    if method not in ("auto", "exact", "normal"):
        raise ValueError(f'`method` must be "auto", "exact" or "normal"; got {method!r}')
    if method == "auto":
        # the normal approximation ignores that the latent counts are integers: with a Laplace
        # scale below a few counts the release is peaked at integers and it is off by nats
        # (n = 401, scale 0.06: -3.6 nats at pi = 0.40).  Measured spread of
        # (exact - normal) over pi, theta within +-0.04 of the truth: 0.20 / 0.25 nats at
        # scale 4, n = 401 / 800; 0.5 / 0.9 at scale 2; 9 / 23 at scale 1
        # (tests/posterior_release/test_reader.py::test_auto_method_normal_only_where_close_to_exact)
        use_normal = rd.n > exact_max and rd.scale >= NORMAL_MIN_SCALE
        method = "normal" if use_normal else "exact"
    logp = naive_bayes_release_logp if method == "exact" else naive_bayes_release_logp_normal
    coords = {"feature": list(rd.features), "class": [0, 1], "cell": _cell_labels(rd)}
    # float64 constants (a Python float exact in float32 would become a float32 constant)
    a, b = np.float64(a), np.float64(b)
    n, scale = rd.n, rd.scale
    with pm.Model(coords=coords) as model:
        z = pm.Data("reports", rd.reports, dims="cell")
        pi = pm.Beta("theta_class", a, b)
        theta = pm.Beta("theta", a, b, dims=("feature", "class"))
        # ``template`` (zeros, one per released cell) only carries the release's length into
        # the signature: PyTensor infers a draw's shape from the parameters' core shapes
        template = np.zeros(len(rd.reports))
        pm.CustomDist(
            "release",
            pi,
            theta,
            template,
            logp=lambda value, pi, theta, _: logp(value, pi, theta, n, scale),
            random=lambda pi, theta, _, rng=None, size=None: simulate_release(
                pi, theta, n, scale, rng, size
            ),
            signature="(),(f,c),(m)->(m)",
            observed=z,
            dims="cell",
        )
    model.release_method = method  # which likelihood was used (exact or normal)
    return model


def _cell_labels(rd: NaiveBayesRelease) -> list[str]:
    """Names of the released cells in :func:`release_reports` order."""
    cells = [f"class={c}" for c in (0, 1)]
    for f in rd.features:
        cells += [f"x{f}={v}|class={c}" for c in (0, 1) for v in (0, 1)]
    return cells


def simulate_release(theta_class, theta, n, scale, rng, size=None) -> np.ndarray:
    r"""Algorithm 1 releases of ``n`` records drawn from a naive Bayes model.

    The mechanism itself, in the :func:`release_reports` layout: class labels
    :math:`Y_i \sim \mathrm{Bernoulli}(\pi)`, features :math:`X_{i,f} \mid Y_i = c \sim
    \mathrm{Bernoulli}(\theta_{f,c})`, the counts of every cell, Laplace(``scale``) noise on
    each and the clamp to :math:`[0, n]`.  ``theta_class`` and ``theta`` (``(..., F, 2)``)
    broadcast over leading batch dimensions (and ``size``); the result has shape
    ``batch + (2 + 4F,)``.
    """
    rng = np.random.default_rng(rng)
    pi = np.asarray(theta_class, dtype=float)
    th = np.asarray(theta, dtype=float)
    batch = np.broadcast_shapes(pi.shape, th.shape[:-2], tuple(size or ()))
    pi = np.broadcast_to(pi, batch)
    th = np.broadcast_to(th, batch + th.shape[-2:])
    n_feat = th.shape[-2]
    k1 = rng.binomial(n, pi)  # records of class 1
    n_c = np.stack([n - k1, k1], axis=-1)  # (..., 2)
    ones = rng.binomial(n_c[..., None, :], th)  # (..., F, 2): X_f = 1 within class c
    table = np.stack([n_c[..., None, :] - ones, ones], axis=-1)  # (..., F, class, value)
    counts = np.concatenate([n_c, table.reshape(batch + (4 * n_feat,))], axis=-1)
    return np.clip(counts + rng.laplace(0.0, scale, size=counts.shape), 0.0, float(n))


def plugin_posterior(release, prior=1.0) -> dict[str, np.ndarray]:
    r"""The paper's reading: released counts as exact, conjugate Beta posteriors.

    Returns ``{"class": (a1, a0), "theta": (F, 2, 2)}`` Beta parameters: ``class`` is
    :math:`(a + z_{Y,1}, b + z_{Y,0})`; ``theta[f, c]`` is :math:`(a + z_{f,c,1}, b +
    z_{f,c,0})` (Beta for :math:`P(X_f = 1 \mid Y = c)`).
    """
    rd = _as_reader(release)
    a, b = _beta_prior(prior)
    z = rd.reports
    cls = np.array([a + z[1], b + z[0]])
    tab = z[2:].reshape(-1, 2, 2)
    theta = np.stack([a + tab[:, :, 1], b + tab[:, :, 0]], axis=-1)
    return {"class": cls, "theta": theta}


def predict_proba(theta_class, theta, features) -> np.ndarray:
    r"""Posterior predictive :math:`P(Y = 1 \mid x)` for test records.

    Parameters
    ----------
    theta_class : array_like, shape (D,) or ()
        Draws of :math:`\pi` (or one plug-in value).
    theta : array_like, shape (D, F, 2) or (F, 2)
        Draws of :math:`\theta_{f,c}`.
    features : array_like, shape (m, F)
        0/1 feature values of the test records (no class column).

    Returns
    -------
    ndarray, shape (m,)
        :math:`P(Y=1 \mid x, \text{release}) = \frac{\sum_d p(Y=1, x \mid \theta_d)}
        {\sum_d p(x \mid \theta_d)}`: the predictive of a new record averages the *joint*
        over the draws (a single plug-in value gives the naive Bayes classifier at that value;
        for independent Beta posteriors the posterior means give the exact predictive).
    """
    from scipy.special import expit, logsumexp

    pi = np.atleast_1d(np.asarray(theta_class, dtype=float))
    th = np.asarray(theta, dtype=float)
    if th.ndim == 2:
        th = th[None]
    x = np.asarray(features, dtype=float)
    if x.ndim != 2 or x.shape[1] != th.shape[1]:
        raise ValueError(f"`features` must have shape (m, {th.shape[1]}); got {x.shape}")
    with np.errstate(divide="ignore"):
        l1, l0 = np.log(th), np.log1p(-th)  # (D, F, 2)
    # log p(x, Y=c | theta_d): (m, D) for each c
    joint = []
    for c, lp in ((0, np.log1p(-pi)), (1, np.log(pi))):
        joint.append(lp[None, :] + x @ l1[:, :, c].T + (1 - x) @ l0[:, :, c].T)
    log1 = logsumexp(joint[1], axis=1)
    log0 = logsumexp(joint[0], axis=1)
    return expit(log1 - log0)


def _kernel_np(z, count, upper, scale):
    """NumPy twin of :func:`pymc_dpnoise.posterior_release.math.clamped_laplace_kernel_logp`."""
    z = np.asarray(z, dtype=float)
    c = np.asarray(count, dtype=float)
    inside = -np.log(2 * scale) - np.abs(z - c) / scale
    out = np.where(
        z <= 0,
        np.log(0.5) - c / scale,
        np.where(z >= upper, np.log(0.5) - (upper - c) / scale, inside),
    )
    return np.where((z < 0) | (z > upper), -np.inf, out)


class ExactPosterior:
    r"""The exact noise-aware posterior of an Algorithm 1 naive Bayes release, without MCMC.

    Given the class count :math:`K = k` and the feature counts :math:`S_{f,c} = s`, the Beta
    priors are conjugate: :math:`\pi \sim \mathrm{Beta}(a + k, b + n - k)` and
    :math:`\theta_{f,c} \sim \mathrm{Beta}(a + s, b + N_c(k) - s)`.  With the priors integrated
    out, the counts have Beta-binomial laws, so

    .. math::

        p(k \mid z) \propto \mathrm{BB}(k; n, a, b)\, h(z_{Y,1}\mid k)\, h(z_{Y,0}\mid n-k)
        \prod_{f,c} R_{f,c}(k), \qquad
        p(s_{f,c} = s \mid k, z) = \frac{\mathrm{BB}(s; N_c(k), a, b)\, h(z_{f,c,1}\mid s)\,
        h(z_{f,c,0}\mid N_c(k)-s)}{R_{f,c}(k)},

    (:math:`R_{f,c}(k)` the normaliser), and given :math:`k` the rows are independent.  The
    posterior of every parameter is then a finite mixture of Betas, computed here in
    :math:`O(F n^2)`.  This is the posterior of :func:`noise_aware_model` (same likelihood,
    same priors), which the tests check.

    Attributes
    ----------
    log_pk : ndarray, shape (n + 1,)
        :math:`\log p(K = k \mid z)`.
    log_ps : ndarray, shape (F, 2, n + 1, n + 1)
        :math:`\log p(S_{f,c} = s \mid K = k, z)` (``-inf`` where :math:`s > N_c(k)`).
    """

    def __init__(self, release, prior=1.0):
        from scipy.special import betaln, gammaln, logsumexp

        a, b = _beta_prior(prior)
        fourier = getattr(release, "mechanism", None) == "fourier_updates"
        rd = _fourier_reader(release) if fourier else _as_reader(release)
        n, z, scale = rd.n, rd.reports, rd.scale
        self.n, self.a, self.b, self.n_features = n, a, b, rd.n_features
        k = np.arange(n + 1, dtype=float)

        def log_bb(s, m):
            with np.errstate(invalid="ignore"):
                out = (
                    gammaln(m + 1)
                    - gammaln(s + 1)
                    - gammaln(m - s + 1)
                    + betaln(a + s, b + m - s)
                    - betaln(a, b)
                )
            return np.where(s <= m, out, -np.inf)

        self.row_n = np.stack([n - k, k])  # (2, K): N_c(k)
        if fourier:
            lk, logm, r = self._fourier_terms(rd, log_bb, logsumexp)
        else:
            lk = log_bb(k, n) + _kernel_np(z[1], k, n, scale) + _kernel_np(z[0], n - k, n, scale)
            m = self.row_n[:, :, None]
            s = k[None, None, :]
            rest = np.maximum(m - s, 0.0)
            tab = z[2:].reshape(-1, 2, 2)
            logm = (
                log_bb(s, m)[None]
                + _kernel_np(tab[:, :, 1, None, None], s, n, scale)
                + _kernel_np(tab[:, :, 0, None, None], rest, n, scale)
            )  # (F, 2, K, S)
            r = logsumexp(logm, axis=-1)
            r = r.sum(axis=1)  # (F, K)
        joint = lk + r.sum(axis=0)
        #: log marginal likelihood of the release, log p(z) (priors integrated out)
        self.log_evidence = float(logsumexp(joint))
        self.log_pk = joint - self.log_evidence
        self.log_ps = logm - logsumexp(logm, axis=-1, keepdims=True)

    def _fourier_terms(self, rd, log_bb, logsumexp):
        """Algorithm 2: independent Laplace(B) noise on the parity sums of {Y}, {X_f} and
        {Y, X_f}, which are n - 2K, n - 2(S_f0 + S_f1) and n - 2(S_f0 + K - S_f1)."""
        n, B = rd.n, rd.scale
        k = np.arange(n + 1, dtype=float)

        def lap(c, mean):
            return -np.log(2 * B) - np.abs(c - mean) / B

        lk = log_bb(k, n) + lap(rd.coef_class, n - 2 * k)
        K, S0, S1 = k[:, None, None], k[None, :, None], k[None, None, :]
        base = log_bb(S0, n - K) + log_bb(S1, K)  # (K, S0, S1)
        logm, r = [], []
        for cf, cyf in zip(rd.coef_feature, rd.coef_pair, strict=True):
            j = base + lap(cf, n - 2 * (S0 + S1)) + lap(cyf, n - 2 * (S0 + K - S1))
            m0, m1 = logsumexp(j, axis=2), logsumexp(j, axis=1)  # marginals of S_f0, S_f1
            logm.append(np.stack([m0, m1]))
            r.append(logsumexp(m0, axis=1))
        return lk, np.array(logm), np.array(r)

    def cdf(self, theta_class, theta) -> tuple[float, np.ndarray]:
        r"""Posterior CDFs at a point: :math:`P(\pi \le` ``theta_class`` :math:`\mid z)` and
        :math:`P(\theta_{f,c} \le` ``theta[f, c]`` :math:`\mid z)` (shape ``(F, 2)``)."""
        from scipy.special import betainc

        a, b, n = self.a, self.b, self.n
        k = np.arange(n + 1, dtype=float)
        pk = np.exp(self.log_pk)
        q_class = float(np.sum(pk * betainc(a + k, b + n - k, float(theta_class))))
        th = np.asarray(theta, dtype=float)[:, :, None, None]
        m = self.row_n[None, :, :, None]
        s = k[None, None, None, :]
        ps = np.exp(self.log_ps)
        with np.errstate(invalid="ignore"):
            inc = betainc(a + s, b + np.maximum(m - s, 0.0), th)
        inner = np.sum(np.where(ps > 0, ps * inc, 0.0), axis=-1)  # (F, 2, K)
        return q_class, np.sum(inner * pk, axis=-1)

    def means(self) -> tuple[float, np.ndarray, np.ndarray]:
        r"""Posterior means given each class count: ``(E[pi | z], m)`` with ``m[f, c, k]`` =
        :math:`E[\theta_{f,c} \mid K = k, z]`, and ``E[theta | z]`` (shape ``(F, 2)``)."""
        a, b, n = self.a, self.b, self.n
        k = np.arange(n + 1, dtype=float)
        pk = np.exp(self.log_pk)
        s = k[None, None, None, :]
        cond = np.sum(np.exp(self.log_ps) * s, axis=-1)  # E[S | k]: (F, 2, K)
        m = (a + cond) / (a + b + self.row_n[None])
        return float(np.sum(pk * (a + k) / (a + b + n))), m, np.sum(m * pk, axis=-1)

    def predict_proba(self, features) -> np.ndarray:
        r"""Exact posterior predictive :math:`P(Y = 1 \mid x, z)` for test records.

        Given :math:`K = k` the parameters are independent, so :math:`p(Y = c, x \mid k, z) =
        E[\pi_c \mid k] \prod_f E[\theta_{f,c} \mid k, z]^{x_f}(1 - E[\theta_{f,c} \mid k,
        z])^{1 - x_f}`; the predictive mixes these over :math:`p(k \mid z)`.
        """
        from scipy.special import expit, logsumexp

        x = np.asarray(features, dtype=float)
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise ValueError(f"`features` must have shape (m, {self.n_features}); got {x.shape}")
        a, b, n = self.a, self.b, self.n
        k = np.arange(n + 1, dtype=float)
        _, m, _ = self.means()  # (F, 2, K)
        out = []
        for c, pc in ((0, (b + n - k) / (a + b + n)), (1, (a + k) / (a + b + n))):
            lm, l1m = np.log(m[:, c, :]), np.log1p(-m[:, c, :])  # (F, K)
            out.append(logsumexp(self.log_pk + np.log(pc) + x @ lm + (1 - x) @ l1m, axis=1))
        return expit(out[1] - out[0])
