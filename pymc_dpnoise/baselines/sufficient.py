r"""DP-SGLD, the private baseline of the GLM paper's experiments (Sec. 4.1, Figs. 3 and 4).

Differentially private stochastic gradient Langevin dynamics (Wang et al. 2015; Li et al. 2019)
for logistic and Poisson regression with a Gaussian prior, and the privacy accountant it needs.

Algorithm (one chain, :math:`T` iterations)
-------------------------------------------
With sampling rate :math:`q = B / N` (expected batch size :math:`B`, the paper's :math:`\sqrt N`),
clipping norm :math:`C`, noise multiplier :math:`\sigma` and step size :math:`\eta`:

.. math::

    \mathcal B_t &\sim \text{Poisson subsample of } \{1..N\}
        \text{ (each record independently with probability } q), \\
    \tilde g_t &= \sum_{i \in \mathcal B_t} \operatorname{clip}_C\bigl(\nabla_\theta
        \log p(y_i \mid x_i, \theta_t)\bigr) + N(0, \sigma^2 C^2 I), \qquad
        \operatorname{clip}_C(g) = g \min(1, C / \|g\|_2), \\
    \theta_{t+1} &= \theta_t + \frac\eta2\Bigl(\nabla_\theta \log p(\theta_t)
        + \frac{\tilde g_t}{q}\Bigr) + \sqrt\eta\,\xi_t, \qquad \xi_t \sim N(0, I).

Only :math:`\tilde g_t` touches the data, so each iteration is the Poisson-subsampled Gaussian
mechanism with L2 sensitivity :math:`C` (neighbours: add or remove one record); the prior term,
the Langevin noise and the iterates are post-processing.  The draws after the burn-in are the
"posterior samples".  Log-likelihood gradients, with :math:`u = \theta^T x`:

* logistic, :math:`y \in \{-1, 1\}`: :math:`\nabla \log p = y\,\mathrm{sigmoid}(-y u)\,x`
  (norm :math:`\le \|x\|`, so with :math:`\|x\| \le R \le C` clipping never binds);
* Poisson, log link: :math:`\nabla \log p = (y - e^u)\,x` (unbounded: clipping matters).

Privacy accounting
------------------
Rényi DP of the Poisson-subsampled Gaussian mechanism at integer orders :math:`\alpha \ge 2`
(Mironov, Talwar & Zhang 2019, Sec. 3.3; the bound of Abadi et al.'s moments accountant,
TF-Privacy and Opacus):

.. math::

    \varepsilon_{\mathrm{RDP}}(\alpha) = \frac{1}{\alpha - 1} \log \sum_{k=0}^{\alpha}
        \binom{\alpha}{k} (1 - q)^{\alpha - k} q^k \exp\Bigl(\frac{k^2 - k}{2\sigma^2}\Bigr),

composed additively over the :math:`T` iterations and converted to :math:`(\varepsilon, \delta)`
by the conversion of Balle et al. (2020, Thm. 21) / Canonne, Kamath & Steinke (2020):

.. math::

    \varepsilon = \min_\alpha\; T\varepsilon_{\mathrm{RDP}}(\alpha)
        + \log\frac{\alpha - 1}{\alpha} - \frac{\log\delta + \log\alpha}{\alpha - 1}.

For :math:`q = 1` the sum reduces to :math:`\varepsilon_{\mathrm{RDP}}(\alpha) = \alpha/(2\sigma^2)`,
the exact RDP of the Gaussian mechanism.  The result is a valid upper bound on ε (integer orders
only; an FFT/PLD accountant such as the GLM paper's Fourier accountant is tighter by a few
percent to tens of percent at these settings).

**Neighbouring relation.** The bound above is for *add/remove-one* neighbours, the usual
convention for DP-SGD.  The sufficient-statistics release of the GLM paper uses *replace-one*
neighbours.  With ``neighbours="replace"`` the target :math:`(\varepsilon, \delta)` is met for
replace-one neighbours by group privacy (a replacement is a removal and an addition): the
add/remove mechanism is calibrated to :math:`(\varepsilon/2,\ \delta/(1 + e^{\varepsilon/2}))`,
which is valid but loose (about twice the noise a tight substitution accountant would need).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.special import gammaln, logsumexp

from ..validation import check_finite, check_rng

__all__ = [
    "DEFAULT_ORDERS",
    "DPSGLDResult",
    "calibrate_noise_multiplier",
    "clip_gradients",
    "dp_sgd_epsilon",
    "dp_sgld",
    "per_example_gradients",
    "rdp_subsampled_gaussian",
    "rdp_to_dp",
]

#: Rényi orders used by default: every integer 2..128, then geometrically spaced up to 20,000
DEFAULT_ORDERS = tuple(
    sorted(set(range(2, 129)) | {int(a) for a in np.geomspace(128, 20000, 60).round()})
)

_GLMS = ("logistic", "poisson")


def _check_prob(name, q):
    q = float(q)
    if not (0.0 < q <= 1.0) or math.isnan(q):
        raise ValueError(f"`{name}` must be in (0, 1]; got {q}")
    return q


def _check_pos_scalar(name, v, *, allow_inf=False):
    try:
        v = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"`{name}` must be a positive number; got {v!r}") from None
    if math.isnan(v) or v <= 0 or (math.isinf(v) and not allow_inf):
        raise ValueError(
            f"`{name}` must be a positive{'' if allow_inf else ' finite'} number; got {v}"
        )
    return v


def _check_int(name, v, lo):
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < lo:
        raise ValueError(f"`{name}` must be an int >= {lo}; got {v!r}")
    return int(v)


def _orders(orders):
    a = np.asarray(DEFAULT_ORDERS if orders is None else orders)
    if a.ndim != 1 or a.size == 0 or np.any(a != np.round(a)) or np.any(a < 2):
        raise ValueError("`orders` must be a non-empty 1-D sequence of integers >= 2")
    return a.astype(np.int64)


# --------------------------------------------------------------------------------------------
# Accountant
# --------------------------------------------------------------------------------------------


def rdp_subsampled_gaussian(q, noise_multiplier, orders=None) -> np.ndarray:
    r"""RDP of one Poisson-subsampled Gaussian mechanism at integer orders (Mironov et al. 2019).

    Parameters
    ----------
    q : float
        Sampling rate in (0, 1] (each record is in the batch independently with probability q).
    noise_multiplier : float
        Noise standard deviation divided by the L2 sensitivity (:math:`\sigma`).
    orders : sequence of int >= 2, optional
        Rényi orders :math:`\alpha` (default :data:`DEFAULT_ORDERS`).

    Returns
    -------
    numpy.ndarray
        :math:`\varepsilon_{\mathrm{RDP}}(\alpha)` for each order (add/remove neighbours), from
        :math:`\frac{1}{\alpha-1}\log\sum_k \binom{\alpha}{k}(1-q)^{\alpha-k}q^k
        e^{(k^2-k)/(2\sigma^2)}`, summed in log space (no overflow for small σ).

    Examples
    --------
    >>> rdp_subsampled_gaussian(1.0, 2.0, [2, 10]).round(6).tolist()  # alpha / (2 sigma^2)
    [0.25, 1.25]
    """
    q = _check_prob("q", q)
    sigma = _check_pos_scalar("noise_multiplier", noise_multiplier)
    orders = _orders(orders)
    out = np.empty(len(orders))
    log_q = math.log(q)
    log_1mq = math.log1p(-q) if q < 1.0 else -np.inf
    for n, a in enumerate(orders):
        k = np.arange(a + 1, dtype=float)
        log_binom = gammaln(a + 1.0) - gammaln(k + 1.0) - gammaln(a - k + 1.0)
        with np.errstate(invalid="ignore"):  # 0 * -inf at q = 1
            terms = log_binom + k * log_q + np.where(k < a, (a - k) * log_1mq, 0.0)
        terms = terms + (k * k - k) / (2.0 * sigma * sigma)
        out[n] = logsumexp(terms) / (a - 1.0)
    return np.maximum(out, 0.0)


def rdp_to_dp(rdp, orders, delta) -> tuple[float, int]:
    r"""Convert RDP values to :math:`(\varepsilon, \delta)`-DP (Balle et al. 2020, Thm. 21).

    :math:`\varepsilon = \min_\alpha\, \varepsilon_{\mathrm{RDP}}(\alpha) + \log((\alpha-1)/\alpha)
    - (\log\delta + \log\alpha)/(\alpha-1)`, clipped below at 0.

    Returns
    -------
    (epsilon, order)
        The smallest ε and the order attaining it.

    Examples
    --------
    >>> eps, a = rdp_to_dp([0.5, 1.0], [2, 3], 1e-5)
    >>> round(eps, 4), a
    (5.8017, 3)
    """
    orders = _orders(orders).astype(float)
    rdp = np.asarray(rdp, dtype=float)
    if rdp.shape != orders.shape:
        raise ValueError(f"`rdp` must have the shape of `orders` {orders.shape}; got {rdp.shape}")
    delta = float(delta)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"`delta` must be in (0, 1); got {delta}")
    eps = rdp + np.log1p(-1.0 / orders) - (math.log(delta) + np.log(orders)) / (orders - 1.0)
    i = int(np.nanargmin(eps))
    return max(float(eps[i]), 0.0), int(orders[i])


def _ar_target(epsilon, delta, neighbours):
    if neighbours == "add-remove":
        return epsilon, delta
    if neighbours == "replace":  # group privacy with k = 2: (2e, (1 + e^e) d) for replace-one
        return epsilon / 2.0, delta / (1.0 + math.exp(epsilon / 2.0))
    raise ValueError(f"`neighbours` must be 'add-remove' or 'replace'; got {neighbours!r}")


def dp_sgd_epsilon(q, noise_multiplier, steps, delta, orders=None) -> float:
    r"""ε after ``steps`` Poisson-subsampled Gaussian mechanisms (add/remove neighbours).

    Examples
    --------
    >>> round(dp_sgd_epsilon(1.0, 1.0, 1, 1e-5), 3)  # one Gaussian mechanism, sigma = 1
    4.753
    """
    steps = _check_int("steps", steps, 1)
    orders = _orders(orders)
    rdp = steps * rdp_subsampled_gaussian(q, noise_multiplier, orders)
    return rdp_to_dp(rdp, orders, delta)[0]


def calibrate_noise_multiplier(
    epsilon, delta, steps, q, *, neighbours="add-remove", orders=None, rtol=1e-4
) -> float:
    r"""Smallest noise multiplier σ (to relative tolerance ``rtol``) with ε(σ) ≤ ``epsilon``.

    Bisection on :math:`\log\sigma`: ε(σ) from :func:`dp_sgd_epsilon` is non-increasing in σ.
    ``epsilon = inf`` returns 0 (no noise).  With ``neighbours="replace"`` the target is first
    mapped to the add/remove budget :math:`(\varepsilon/2, \delta/(1+e^{\varepsilon/2}))` (see the
    module docstring).

    Examples
    --------
    >>> s = calibrate_noise_multiplier(1.0, 1e-5, 1000, 0.01)
    >>> dp_sgd_epsilon(0.01, s, 1000, 1e-5) <= 1.0 < dp_sgd_epsilon(0.01, 0.99 * s, 1000, 1e-5)
    True
    """
    epsilon = _check_pos_scalar("epsilon", epsilon, allow_inf=True)
    delta = float(delta)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"`delta` must be in (0, 1); got {delta}")
    steps = _check_int("steps", steps, 1)
    q = _check_prob("q", q)
    _check_pos_scalar("rtol", rtol)
    if math.isinf(epsilon):
        return 0.0
    eps_t, delta_t = _ar_target(epsilon, delta, neighbours)
    orders = _orders(orders)

    def eps_of(s):
        return dp_sgd_epsilon(q, s, steps, delta_t, orders)

    lo, hi = 1e-2, 1.0
    while eps_of(hi) > eps_t:
        lo, hi = hi, hi * 2.0
        if hi > 1e8:
            raise ValueError(f"no noise multiplier <= 1e8 reaches epsilon = {epsilon}")
    while eps_of(lo) <= eps_t:
        hi, lo = lo, lo / 2.0
        if lo < 1e-8:
            return hi
    while hi / lo > 1.0 + rtol:
        mid = math.sqrt(lo * hi)
        if eps_of(mid) <= eps_t:
            hi = mid
        else:
            lo = mid
    return hi


# --------------------------------------------------------------------------------------------
# Gradients
# --------------------------------------------------------------------------------------------


def per_example_gradients(theta, X, y, glm: str) -> np.ndarray:
    r"""Gradients :math:`\nabla_\theta \log p(y_i \mid x_i, \theta)`, shape ``(n, d)``.

    Logistic (:math:`y \in \{-1, 1\}`): :math:`y_i\,\mathrm{sigmoid}(-y_i u_i)\,x_i`;
    Poisson (log link): :math:`(y_i - e^{u_i})\,x_i` with :math:`u_i = \theta^T x_i`
    (:math:`u` is capped at 300 so that :math:`e^u` and its square stay finite).

    Examples
    --------
    >>> per_example_gradients([0.0, 0.0], [[1.0, 2.0]], [1.0], "logistic").tolist()
    [[0.5, 1.0]]
    """
    if glm not in _GLMS:
        raise ValueError(f"`glm` must be one of {_GLMS}; got {glm!r}")
    theta = np.asarray(theta, dtype=float)
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    u = X @ theta
    if glm == "logistic":
        r = y / (1.0 + np.exp(np.clip(y * u, -700.0, 700.0)))  # y * sigmoid(-y u)
    else:
        r = y - np.exp(np.minimum(u, 300.0))
    return r[:, None] * X


def clip_gradients(G, C) -> np.ndarray:
    """Scale every row of ``G`` with L2 norm above ``C`` down to norm ``C``.

    Examples
    --------
    >>> clip_gradients([[3.0, 4.0], [0.3, 0.4]], 1.0).round(6).tolist()
    [[0.6, 0.8], [0.3, 0.4]]
    """
    C = _check_pos_scalar("C", C)
    G = np.asarray(G, dtype=float)
    norm = np.linalg.norm(G, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.minimum(1.0, C / np.maximum(norm, np.finfo(float).tiny))
    return G * scale


# --------------------------------------------------------------------------------------------
# DP-SGLD
# --------------------------------------------------------------------------------------------


class DPSGLDResult(NamedTuple):
    """Output of :func:`dp_sgld`."""

    #: iterates after the burn-in, shape (iterations - burn_in, d)
    samples: np.ndarray
    #: noise multiplier σ (noise sd on the summed clipped gradient is σ·clip)
    noise_multiplier: float
    #: sampling rate q = batch_size / N
    q: float
    #: ε spent over all iterations for add/remove neighbours (at the δ used for calibration)
    epsilon_add_remove: float
    #: the target (ε, δ) and its neighbouring relation
    epsilon: float
    delta: float
    neighbours: str
    #: fraction of per-example gradients that were clipped
    clipped_fraction: float


def dp_sgld(
    X,
    y,
    glm: str,
    epsilon,
    delta,
    rng,
    *,
    iterations: int = 10_000,
    burn_in: int = 6_000,
    batch_size=None,
    step_size: float = 1e-2,
    clip: float = 1.0,
    prior_sd: float = 1.0,
    theta0=None,
    neighbours: str = "add-remove",
    noise_multiplier=None,
) -> DPSGLDResult:
    r"""Sample a logistic or Poisson regression posterior with DP-SGLD.

    Parameters
    ----------
    X : array_like, shape (N, d)
        Features (no intercept column is added).
    y : array_like, shape (N,)
        Labels in {-1, 1} (``glm="logistic"``) or non-negative counts (``"poisson"``).
    glm : {"logistic", "poisson"}
    epsilon, delta : float
        Total privacy budget over all ``iterations`` (``epsilon = inf``: no privacy noise).
    rng : numpy.random.Generator or seed
    iterations, burn_in : int
        Total iterations :math:`T` and how many of the first are discarded (paper: 10,000, 6,000).
    batch_size : float, optional
        Expected batch size :math:`B` (Poisson subsampling, :math:`q = B/N`); default
        :math:`\sqrt N` (Abadi et al. 2016, as in the paper).
    step_size : float
        :math:`\eta` in the update of the module docstring.
    clip : float
        Per-example L2 clipping norm :math:`C`.
    prior_sd : float
        Prior :math:`\theta \sim N(0, \text{prior\_sd}^2 I)`.
    theta0 : array_like, optional
        Starting point (zeros by default).
    neighbours : {"add-remove", "replace"}
        Neighbouring relation the (ε, δ) guarantee refers to (see the module docstring).
    noise_multiplier : float, optional
        Override the calibrated σ (then ``epsilon`` is only reported, not enforced).

    Returns
    -------
    DPSGLDResult

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> X = rng.normal(0, 0.4, size=(400, 2)) / np.sqrt(2)
    >>> y = np.where(rng.random(400) < 1 / (1 + np.exp(-X @ [2.0, -1.0])), 1.0, -1.0)
    >>> res = dp_sgld(X, y, "logistic", 1.0, 1e-5, rng, iterations=2000, burn_in=1000)
    >>> res.samples.shape, res.epsilon_add_remove <= 1.0
    ((1000, 2), True)
    """
    if glm not in _GLMS:
        raise ValueError(f"`glm` must be one of {_GLMS}; got {glm!r}")
    rng = check_rng(rng)
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"`X` must have shape (N, d); got {X.shape}")
    y = np.asarray(y, dtype=float)
    if y.shape != (X.shape[0],):
        raise ValueError(f"`y` must have shape ({X.shape[0]},); got {y.shape}")
    check_finite("X", X)
    check_finite("y", y)
    if glm == "logistic" and not np.all(np.abs(y) == 1):
        raise ValueError("`y` must be in {-1, 1} for glm='logistic'")
    if glm == "poisson" and np.any(y < 0):
        raise ValueError("`y` must be >= 0 for glm='poisson'")
    epsilon = _check_pos_scalar("epsilon", epsilon, allow_inf=True)
    delta = float(delta)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"`delta` must be in (0, 1); got {delta}")
    iterations = _check_int("iterations", iterations, 1)
    burn_in = _check_int("burn_in", burn_in, 0)
    if burn_in >= iterations:
        raise ValueError(f"`burn_in` must be < `iterations`; got {burn_in} >= {iterations}")
    step_size = _check_pos_scalar("step_size", step_size)
    clip = _check_pos_scalar("clip", clip)
    prior_sd = _check_pos_scalar("prior_sd", prior_sd)
    _ar_target(1.0, 0.5, neighbours)  # validates `neighbours`
    n, d = X.shape
    b = math.sqrt(n) if batch_size is None else batch_size
    b = _check_pos_scalar("batch_size", b)
    if b > n:
        raise ValueError(f"`batch_size` must be <= N = {n}; got {b}")
    q = b / n
    if noise_multiplier is None:
        sigma = calibrate_noise_multiplier(epsilon, delta, iterations, q, neighbours=neighbours)
    else:
        sigma = float(noise_multiplier)
        if not sigma >= 0 or math.isinf(sigma):
            raise ValueError(f"`noise_multiplier` must be finite and >= 0; got {sigma}")
    _, delta_ar = _ar_target(epsilon if math.isfinite(epsilon) else 1.0, delta, neighbours)
    spent = dp_sgd_epsilon(q, sigma, iterations, delta_ar) if sigma > 0 else math.inf
    theta = np.zeros(d) if theta0 is None else np.asarray(theta0, dtype=float).copy()
    if theta.shape != (d,):
        raise ValueError(f"`theta0` must have shape ({d},); got {theta.shape}")
    out = np.empty((iterations - burn_in, d))
    sqrt_eta = math.sqrt(step_size)
    noise_sd = sigma * clip
    xnorm = np.linalg.norm(X, axis=1)
    n_clipped = n_grads = 0
    sizes = rng.binomial(n, q, size=iterations)
    langevin = rng.normal(0.0, sqrt_eta, size=(iterations, d))
    dp_noise = rng.normal(0.0, noise_sd, size=(iterations, d)) if noise_sd > 0 else None
    for t in range(iterations):
        idx = rng.choice(n, size=sizes[t], replace=False)
        xb, yb = X[idx], y[idx]
        # per-example gradient r_i x_i; its norm is |r_i| ||x_i||, so clipping scales r_i
        u = xb @ theta
        if glm == "logistic":
            r = yb / (1.0 + np.exp(np.clip(yb * u, -700.0, 700.0)))
        else:
            r = yb - np.exp(np.minimum(u, 300.0))
        gnorm = np.abs(r) * xnorm[idx]
        big = gnorm > clip
        n_clipped += int(np.count_nonzero(big))
        n_grads += len(idx)
        r = np.where(big, r * (clip / np.where(big, gnorm, 1.0)), r)
        gsum = r @ xb
        if dp_noise is not None:
            gsum = gsum + dp_noise[t]
        drift = -theta / prior_sd**2 + gsum / q
        theta = theta + 0.5 * step_size * drift + langevin[t]
        if t >= burn_in:
            out[t - burn_in] = theta
    return DPSGLDResult(
        samples=out,
        noise_multiplier=sigma,
        q=q,
        epsilon_add_remove=spent if math.isfinite(epsilon) else math.inf,
        epsilon=epsilon,
        delta=delta,
        neighbours=neighbours,
        clipped_fraction=n_clipped / max(n_grads, 1),
    )
