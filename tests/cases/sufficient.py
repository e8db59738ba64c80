"""SSNormalApprox registry entry, and independent references for its moments.

The references do not use :mod:`pymc_dpnoise.math.sufficient`: they build the statistics from
explicit monomial lists and evaluate every Gaussian moment by enumerating all Isserlis pairings
(perfect matchings) of the index multiset, in plain Python/NumPy.  Logistic moments with a
Taylor polynomial are exact polynomial moments of the jointly Gaussian (x, u), u = θᵀx; Poisson
moments use the tilting identity E[f(x) e^{kθᵀx}] = e^{k²s²/2} E[f(x + kΣθ)] (expanded by
enumeration as well).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pymc as pm
from registry import VectorCase
from scipy import stats

from pymc_dpnoise.distributions.sufficient import SSNormalApprox
from pymc_dpnoise.mechanisms.core import analytic_gaussian_sigma

# --------------------------------------------------------------------------------------------
# Independent references
# --------------------------------------------------------------------------------------------


def _matchings(items):
    """All perfect matchings of a list of positions (list of lists of pairs)."""
    if not items:
        yield []
        return
    a = items[0]
    for k in range(1, len(items)):
        rest = items[1:k] + items[k + 1 :]
        for m in _matchings(rest):
            yield [(a, items[k]), *m]


def isserlis(C, idx):
    """E[prod_k w[idx[k]]] for w ~ N(0, C), by summing over all pairings."""
    idx = list(idx)
    if len(idx) % 2:
        return 0.0
    total = 0.0
    for m in _matchings(list(range(len(idx)))):
        total += math.prod(C[idx[a], idx[b]] for a, b in m)
    return total


def monomials(glm, d):
    """Statistics as (weight, y_power, x_indices), in the documented layouts."""
    t2 = [(1.0, (i, i)) for i in range(d)]
    t2 += [(math.sqrt(2.0), (i, j)) for i in range(d) for j in range(i + 1, d)]
    t1 = [(1.0, (i,)) for i in range(d)]
    if glm == "linear":
        return [(w, 0, ix) for w, ix in t2] + [(1.0, 1, ix) for _, ix in t1] + [(1.0, 2, ())]
    if glm == "logistic":
        return [(1.0, 1, ix) for _, ix in t1] + [(w, 0, ix) for w, ix in t2]
    return (
        [(1.0, 0, ix) for _, ix in t1]
        + [(w, 0, ix) for w, ix in t2]
        + [(1.0, 1, ix) for _, ix in t1]
        + [(w, 1, ix) for w, ix in t2]
    )


def _taylor_coef(order):
    # tanh(u/2) = sum_n 2 (2^{2n} - 1) B_{2n} u^{2n-1} / (2n)!, Bernoulli numbers from scipy
    from scipy.special import bernoulli

    b = bernoulli(order + 1)
    c = {}
    for n in range(1, (order + 1) // 2 + 1):
        c[2 * n - 1] = 2 * (2 ** (2 * n) - 1) * b[2 * n] / math.factorial(2 * n)
    return c


def reference_moments(theta, cov, glm, sigma=None, order=3):
    """Per-record mean and covariance by enumeration (linear, logistic-Taylor, Poisson)."""
    theta = np.asarray(theta, float)
    cov = np.asarray(cov, float)
    d = len(theta)
    mons = monomials(glm, d)
    v = cov @ theta
    s2 = float(theta @ v)
    if glm == "linear":
        # joint Gaussian of (x, y); the y index is d
        C = np.block([[cov, v[:, None]], [v[None, :], np.array([[s2 + sigma**2]])]])

        def e(p, ix):
            return isserlis(C, tuple(ix) + (d,) * p)

    elif glm == "logistic":
        # (x, u) jointly Gaussian; E[y^p | x] = 1 (p even) or sum_k c_k u^k (p odd)
        C = np.block([[cov, v[:, None]], [v[None, :], np.array([[s2]])]])
        coef = _taylor_coef(order)

        def e(p, ix):
            if p % 2 == 0:
                return isserlis(C, ix)
            return sum(ck * isserlis(C, tuple(ix) + (d,) * k) for k, ck in coef.items())

    else:
        # E[y^p | x]: p=0: 1, p=1: e^u, p=2: e^u + e^{2u}; tilting: E[f(x) e^{ku}] =
        # e^{k^2 s2/2} E[f(x + k v)], expanded over subsets of the shifted factors
        def tilt(k, ix):
            total = 0.0
            n = len(ix)
            for mask in range(2**n):
                shifted = [ix[r] for r in range(n) if mask >> r & 1]
                plain = [ix[r] for r in range(n) if not mask >> r & 1]
                total += math.prod(k * v[a] for a in shifted) * isserlis(cov, plain)
            return math.exp(k * k * s2 / 2) * total

        def e(p, ix):
            if p == 0:
                return isserlis(cov, ix)
            if p == 1:
                return tilt(1, ix)
            return tilt(1, ix) + tilt(2, ix)

    mean = np.array([w * e(p, ix) for w, p, ix in mons])
    m = len(mons)
    second = np.empty((m, m))
    for a in range(m):
        for b in range(a, m):
            wa, pa, ia = mons[a]
            wb, pb, ib = mons[b]
            second[a, b] = second[b, a] = wa * wb * e(pa + pb, tuple(ia) + tuple(ib))
    return mean, second - np.outer(mean, mean)


@functools.cache
def _ref_cached(theta, cov, glm, sigma, order):
    return reference_moments(np.array(theta), np.array(cov), glm, sigma, order)


def reference_logp(value, theta, cov, n, noise_cov, glm, sigma=None, order=3):
    """scipy.stats.multivariate_normal with the enumerated moments; batch axes in front."""
    value = np.asarray(value, float)
    theta, cov = np.asarray(theta, float), np.asarray(cov, float)
    n, noise_cov = np.asarray(n, float), np.asarray(noise_cov, float)
    m = value.shape[-1]
    batch = np.broadcast_shapes(
        value.shape[:-1], theta.shape[:-1], cov.shape[:-2], n.shape, noise_cov.shape[:-2]
    )
    out = np.empty(batch)
    for idx in np.ndindex(batch):
        th = np.broadcast_to(theta, (*batch, theta.shape[-1]))[idx]
        cv = np.broadcast_to(cov, (*batch, *cov.shape[-2:]))[idx]
        nn = float(np.broadcast_to(n, batch)[idx])
        nc = np.broadcast_to(noise_cov, (*batch, m, m))[idx]
        z = np.broadcast_to(value, (*batch, m))[idx]
        mean, cs = _ref_cached(
            tuple(th), tuple(map(tuple, cv)), glm, sigma, order if glm == "logistic" else 3
        )
        out[idx] = stats.multivariate_normal(nn * mean, nn * cs + nc).logpdf(z)
    return out


# --------------------------------------------------------------------------------------------
# The VectorCase (logistic, the GLM paper's main model)
# --------------------------------------------------------------------------------------------

_D = 2
_M = 5
_COV = np.array([[0.09, 0.02], [0.02, 0.05]])
_TYP = dict(
    theta=np.array([0.8, -0.5]),
    cov=_COV,
    n=2000.0,
    noise_cov=4.5 * np.eye(_M),
    glm="logistic",
)


def _grid():
    out = []
    rng = np.random.default_rng(11)
    for theta, scale, n, noise in [
        ([0.0, 0.0], 1.0, 1.0, 1.0),
        ([1.0, -0.5], 1.0, 1e3, 1e-4),
        ([2.0, 1.0], 0.1, 1e6, 1e4),
        ([-0.3, 0.2], 10.0, 50.0, 1e2),
        ([0.5, 0.5], 1e-2, 1e5, 1e-2),
    ]:
        cov = _COV * scale
        params = dict(
            theta=np.array(theta), cov=cov, n=n, noise_cov=noise * np.eye(_M), glm="logistic"
        )
        mean, cs = _ref_cached(tuple(theta), tuple(map(tuple, cov)), "logistic", None, 3)
        total = n * cs + params["noise_cov"]
        chol = np.linalg.cholesky(total)
        for far in (0.0, 1.0, 5.0, 30.0):
            z = n * mean + far * chol @ rng.normal(size=_M)
            out.append((z, params))
    return out


def _simulate(rng, params, n_reports):
    """The actual mechanism: n records from the GLM, summed, plus the release noise."""
    d = len(params["theta"])
    n_rec = int(params["n"])
    out = np.empty((n_reports, _M))
    chol_noise = np.linalg.cholesky(params["noise_cov"])
    for r in range(n_reports):
        x = rng.multivariate_normal(np.zeros(d), params["cov"], size=n_rec)
        p = 1.0 / (1.0 + np.exp(-x @ params["theta"]))
        y = np.where(rng.random(n_rec) < p, 1.0, -1.0)
        pairs = [(a, a) for a in range(d)] + [(a, b) for a in range(d) for b in range(a + 1, d)]
        i, j = np.array(pairs).T  # squares first, then cross terms (lexicographic)
        w = np.where(i == j, 1.0, np.sqrt(2.0))
        t = np.hstack([y[:, None] * x, x[:, i] * x[:, j] * w])
        out[r] = t.sum(0) + chol_noise @ rng.normal(size=_M)
    return out


def _draws_check(draws, params, logp_fn=None):
    """Mahalanobis distances of the draws under the reference moments are chi2(m) (KS)."""
    mean, cs = reference_moments(params["theta"], params["cov"], "logistic")
    total = params["n"] * cs + params["noise_cov"]
    r = np.asarray(draws) - params["n"] * mean
    d2 = np.einsum("...i,ij,...j->...", r, np.linalg.inv(total), r)
    p = stats.kstest(d2.ravel(), stats.chi2(_M).cdf).pvalue
    assert p > 1e-3, f"draws do not fit the normal approximation: KS p = {p:.2e}"


def _model(data, settings):
    sig = analytic_gaussian_sigma(settings["epsilon"], 1e-5, np.sqrt(4.5))
    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, 2.0, shape=_D)
        SSNormalApprox("obs", theta, _COV, 2000.0, sig**2 * np.eye(_M), "logistic", observed=data)
    return model


def _batch_example():
    params = dict(
        theta=np.array([[0.8, -0.5], [0.0, 0.3], [-1.0, 1.0]]),
        cov=_COV,
        n=np.array([100.0, 2000.0, 5.0]),
        noise_cov=4.5 * np.eye(_M),
        glm="logistic",
    )
    value = np.random.default_rng(3).normal(size=(3, _M)) * 10
    return params, value


CASES = [
    VectorCase(
        name="ss_normal_approx_logistic",
        cls=SSNormalApprox,
        core_ndim={"theta": 1, "cov": 2, "n": 0, "noise_cov": 2},
        event_ndim=1,
        typical=_TYP,
        reference=lambda value, **p: reference_logp(value, **p),
        grid=_grid,
        simulate=_simulate,
        model=_model,
        model_settings=[{"epsilon": 0.1}, {"epsilon": 1.0}],
        bad_params=[
            ({"n": -1.0}, "n"),
            ({"cov": -np.eye(2)}, "cov"),
            ({"noise_cov": np.eye(4)}, "noise_cov"),
            ({"theta": np.array([np.nan, 0.0])}, "theta"),
            ({"glm": "probit"}, "glm"),
            ({"sigma": 1.0}, "sigma"),
        ],
        bad_observed=[(np.full(_M, np.nan), "finite")],
        batch_example=_batch_example,
        # reference through scipy's multivariate normal with the GLM moments (Cholesky of 5x5, cond
        # <= 1e3) and libm: 1e-9 relative is > 1e3 of that error
        rtol=1e-9,
        draws_check=_draws_check,
        shifted={"theta": np.array([1.6, -0.5])},
        n_model=20,
    )
]
