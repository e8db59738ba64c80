"""Registry entries (``harness.VectorCase``) for perturbed-input linear and logistic regression.

The references here are written from the model definitions (LDP paper, Supplement 12) with
NumPy/SciPy, not from ``pymc_dpnoise.math``:

* linear: the joint covariance of ``[z_x, z_y]`` is assembled entry by entry from the
  generative model and the density is ``scipy.stats.multivariate_normal``;
* logistic: ``h`` and ``A`` of eq. 43 with ``numpy.linalg.solve`` (the paper's form, not the
  package's rearrangement), ``E[sigmoid(u)]`` by ``scipy.integrate.quad`` with break points at
  the sigmoid's centre, and the randomized-response mixture.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
from registry import VectorCase
from scipy import integrate, special, stats

from pymc_dpnoise.distributions.regression import PerturbedLinReg, PerturbedLogReg
from pymc_dpnoise.mechanisms import randomized_response

# --------------------------------------------------------------------------------------------
# Independent references
# --------------------------------------------------------------------------------------------


def _sx_vec(sigma_x, d):
    return np.broadcast_to(np.asarray(sigma_x, dtype=float), (d,))


def linreg_cov_ref(theta, sigma, cov, sigma_x, sigma_y):
    """Cov of [z_x, z_y] from the model: Cov(x + e_x) and Cov(x, theta.x + e + e_y), entry-wise."""
    theta = np.asarray(theta, float)
    cov = np.asarray(cov, float)
    d = theta.size
    sx = _sx_vec(sigma_x, d)
    C = np.empty((d + 1, d + 1))
    for i in range(d):
        for j in range(d):
            C[i, j] = cov[i, j] + (sx[i] ** 2 if i == j else 0.0)
        C[i, d] = C[d, i] = sum(cov[i, k] * theta[k] for k in range(d))
    C[d, d] = sum(theta[i] * cov[i, j] * theta[j] for i in range(d) for j in range(d))
    C[d, d] += float(sigma) ** 2 + float(sigma_y) ** 2
    return C


def _broadcast_rows(value, params, core):
    """Yield (index, row, params_at_index) over the broadcast batch shape."""
    value = np.asarray(value, float)
    batch_shapes = [value.shape[:-1]]
    arrs = {}
    for k, v in params.items():
        a = np.asarray(v, float)
        nd = core[k]
        if k == "sigma_x" and a.ndim == 0:
            nd = 0
        arrs[k] = (a, nd)
        batch_shapes.append(a.shape[: a.ndim - nd])
    batch = np.broadcast_shapes(*batch_shapes)
    vb = np.broadcast_to(value, (*batch, value.shape[-1]))
    for idx in np.ndindex(batch):
        p = {}
        for k, (a, nd) in arrs.items():
            ab = np.broadcast_to(a, (*batch, *a.shape[a.ndim - nd :]))
            p[k] = ab[idx]
        yield idx, vb[idx], p, batch


LIN_CORE = {"theta": 1, "sigma": 0, "cov": 2, "sigma_x": 1, "sigma_y": 0}
LOG_CORE = {"theta": 1, "cov": 2, "sigma_x": 1, "epsilon_y": 0}


def mvn_logpdf_longdouble(x, C):
    """log N(x; 0, C) by a textbook Cholesky in extended precision (np.longdouble, 64-bit
    mantissa on x86-64), so that the reference is accurate well beyond float64 even for
    ill-conditioned C.  Cross-checked against scipy in the tests."""
    ld = np.longdouble
    C = np.asarray(C, dtype=ld)
    x = np.asarray(x, dtype=ld)
    m = C.shape[0]
    L = np.zeros((m, m), dtype=ld)
    for j in range(m):
        s = C[j, j] - sum(L[j, k] * L[j, k] for k in range(j))
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, m):
            L[i, j] = (C[i, j] - sum(L[i, k] * L[j, k] for k in range(j))) / L[j, j]
    y = np.zeros(m, dtype=ld)
    for i in range(m):
        y[i] = (x[i] - sum(L[i, k] * y[k] for k in range(i))) / L[i, i]
    logdet = 2 * sum(np.log(L[i, i]) for i in range(m))
    return float(-0.5 * (m * np.log(2 * np.pi, dtype=ld) + logdet + np.sum(y * y)))


def linreg_logp_ref(value, theta, sigma, cov, sigma_x, sigma_y):
    params = dict(theta=theta, sigma=sigma, cov=cov, sigma_x=sigma_x, sigma_y=sigma_y)
    out = None
    for idx, row, p, batch in _broadcast_rows(value, params, LIN_CORE):
        if out is None:
            out = np.empty(batch)
        out[idx] = mvn_logpdf_longdouble(row, linreg_cov_ref(**p))
    return out


def expected_sigmoid_ref(m, s, sign=1.0):
    """E[sigmoid(sign * u)], u ~ N(m, s^2), by adaptive quadrature in the standard normal t."""
    m, s = float(m), float(s)
    if s == 0.0:
        return float(special.expit(sign * m))

    def f(t):
        return special.expit(sign * (m + s * t)) * np.exp(-0.5 * t * t) / np.sqrt(2 * np.pi)

    t0 = -m / s
    pts = sorted({p for p in (t0, t0 - 1 / s, t0 + 1 / s, t0 - 30 / s, t0 + 30 / s, 0.0)})
    pts = [p for p in pts if -40 < p < 40]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        val, _ = integrate.quad(
            f, -40, 40, points=pts or None, epsabs=1e-15, epsrel=1e-13, limit=1000
        )
    return val


def logreg_logp_ref(value, theta, cov, sigma_x, epsilon_y):
    params = dict(theta=theta, cov=cov, sigma_x=sigma_x, epsilon_y=epsilon_y)
    out = None
    for idx, row, p, batch in _broadcast_rows(value, params, LOG_CORE):
        if out is None:
            out = np.empty(batch)
        th = np.asarray(p["theta"], float)
        cv = np.asarray(p["cov"], float)
        d = th.size
        zx, zy = row[:d], row[d]
        if zy not in (0.0, 1.0):
            out[idx] = -np.inf
            continue
        sz = cv + np.diag(_sx_vec(p["sigma_x"], d) ** 2)
        lx = stats.multivariate_normal(np.zeros(d), sz).logpdf(zx)
        h = cv @ np.linalg.solve(sz, zx)
        A = cv - cv @ np.linalg.solve(sz, cv)
        m = th @ h
        v = max(th @ A @ th, 0.0)
        e = expected_sigmoid_ref(m, np.sqrt(v), 1.0 if zy == 1.0 else -1.0)
        eps = float(p["epsilon_y"])
        rho = special.expit(eps)
        out[idx] = lx + np.log((1 - rho) + (2 * rho - 1) * e)
    return out


# --------------------------------------------------------------------------------------------
# NumPy mechanisms (the generative model, written independently of the PyMC draws)
# --------------------------------------------------------------------------------------------


def linreg_simulate(rng, params, n):
    th = np.asarray(params["theta"], float)
    d = th.size
    x = rng.multivariate_normal(np.zeros(d), np.asarray(params["cov"], float), size=n)
    y = x @ th + rng.normal(0.0, params["sigma"], n)
    zx = x + rng.normal(size=(n, d)) * _sx_vec(params["sigma_x"], d)
    zy = y + rng.normal(0.0, params["sigma_y"], n)
    return np.column_stack([zx, zy])


def logreg_simulate(rng, params, n):
    th = np.asarray(params["theta"], float)
    d = th.size
    x = rng.multivariate_normal(np.zeros(d), np.asarray(params["cov"], float), size=n)
    y = (rng.random(n) < special.expit(x @ th)).astype(int)
    zx = x + rng.normal(size=(n, d)) * _sx_vec(params["sigma_x"], d)
    zy = randomized_response(y, params["epsilon_y"], rng)
    return np.column_stack([zx, zy.astype(float)])


# --------------------------------------------------------------------------------------------
# Draw checks (continuous reports)
# --------------------------------------------------------------------------------------------


def linreg_draws_check(draws, params, logp_fn=None):
    """Sample covariance against the model's covariance (each entry within 5 standard errors),
    and, with a density, the mean log density against its expectation under the model."""
    draws = np.asarray(draws, float).reshape(-1, np.shape(draws)[-1])
    n = draws.shape[0]
    C = linreg_cov_ref(**params)
    S = draws.T @ draws / n
    se = np.sqrt((C**2 + np.outer(np.diag(C), np.diag(C))) / n)  # Wishart entry sd
    z = np.abs(S - C) / se
    assert z.max() < 5.0, f"sample covariance off by {z.max():.1f} standard errors:\n{S}\nvs\n{C}"
    if logp_fn is not None:
        lp = np.asarray(logp_fn(draws), float)
        m = C.shape[0]
        expected = -0.5 * (m * np.log(2 * np.pi) + np.linalg.slogdet(C)[1] + m)
        se_lp = lp.std(ddof=1) / np.sqrt(n)
        assert abs(lp.mean() - expected) < 5 * se_lp


def logreg_draws_check(draws, params, logp_fn=None):
    """z_x covariance vs Σ + Σ*, and the reported-label frequency vs the model's P(z_y=1 | z_x)."""
    draws = np.asarray(draws, float).reshape(-1, np.shape(draws)[-1])
    n, p = draws.shape
    d = p - 1
    assert set(np.unique(draws[:, -1])) <= {0.0, 1.0}
    sz = np.asarray(params["cov"], float) + np.diag(_sx_vec(params["sigma_x"], d) ** 2)
    S = draws[:, :d].T @ draws[:, :d] / n
    se = np.sqrt((sz**2 + np.outer(np.diag(sz), np.diag(sz))) / n)
    assert (np.abs(S - sz) / se).max() < 5.0
    if logp_fn is not None:
        ones = draws.copy()
        ones[:, -1] = 1.0
        zeros = draws.copy()
        zeros[:, -1] = 0.0
        l1 = np.asarray(logp_fn(ones), float)
        l0 = np.asarray(logp_fn(zeros), float)
        pi1 = special.expit(l1 - l0)
        resid = draws[:, -1] - pi1
        # residuals are mean zero given z_x: check their mean and their products with each
        # feature (score-like statistics, sensitive to theta), each within 5 standard errors
        w = pi1 * (1 - pi1)
        for weight in [np.ones(n), *draws[:, :d].T]:
            stat = np.sum(weight * resid)
            se_r = np.sqrt(np.sum(weight**2 * w))
            assert abs(stat) < 5 * se_r, f"reported labels off by {stat / se_r:.1f} SE"


# --------------------------------------------------------------------------------------------
# Grids
# --------------------------------------------------------------------------------------------


def _corr_cov(d, rho, scale):
    c = np.full((d, d), rho) + (1 - rho) * np.eye(d)
    s = np.asarray(scale, float) * np.ones(d)
    return c * np.outer(s, s)


def linreg_grid():
    rng = np.random.default_rng(11)
    out = []
    for d in (1, 3):
        for rho, scale in ((0.0, 1.0), (0.9, 0.1), (-0.3 if d > 1 else 0.0, 30.0)):
            # noise relative to the feature scale: 1e-2 (nearly noiseless) to 100.  (At 1e-3
            # cond(C) reaches 1.6e7 and float64 itself limits the error to ~2e-10; see
            # test_linreg_ill_conditioned in distributions/test_regression.py.)
            for sx, sy, sigma in ((1e-2, 1e-2, 1e-2), (0.5, 0.5, 0.3), (100.0, 50.0, 10.0)):
                theta = rng.normal(0.0, 2.0, d)
                params = dict(
                    theta=theta,
                    sigma=sigma * scale,
                    cov=_corr_cov(d, rho, scale),
                    sigma_x=sx * scale,
                    sigma_y=sy * scale,
                )
                C = linreg_cov_ref(**params)
                val = rng.multivariate_normal(np.zeros(d + 1), C, size=4)
                val = np.concatenate([val, 30.0 * val[:1], np.zeros((1, d + 1))])  # far tail, 0
                out.append((val, params))
        # sigma_x per feature
        out.append(
            (
                rng.normal(size=(3, d + 1)),
                dict(
                    theta=np.linspace(-1, 2, d),
                    sigma=0.7,
                    cov=_corr_cov(d, 0.2, 1.5),
                    sigma_x=np.linspace(0.1, 3.0, d),
                    sigma_y=0.2,
                ),
            )
        )
    return out


def logreg_grid():
    rng = np.random.default_rng(12)
    out = []
    for d in (1, 2):
        for rho, scale in ((0.0, 1.0), (0.8 if d > 1 else 0.0, 0.3)):
            for sx in (1e-3, 0.5, 20.0):
                for eps in (0.01, 1.0, 8.0):
                    for tscale in (0.0, 1.0, 10.0):
                        theta = rng.normal(0.0, 1.0, d) * tscale
                        cov = _corr_cov(d, rho, scale)
                        zx = rng.multivariate_normal(np.zeros(d), cov + sx**2 * np.eye(d), size=2)
                        zx = np.concatenate([zx, 10 * zx[:1]])
                        rows = [np.append(z, lab) for z in zx for lab in (0.0, 1.0)]
                        out.append(
                            (
                                np.array(rows),
                                dict(theta=theta, cov=cov, sigma_x=sx, epsilon_y=eps),
                            )
                        )
    return out


# --------------------------------------------------------------------------------------------
# Models for the gradient / backend checks
# --------------------------------------------------------------------------------------------


def linreg_model(data, settings):
    d = data.shape[1] - 1
    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, 5.0, shape=d)
        sigma = pm.HalfNormal("sigma", 1.0)
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=d, eta=2.0, sd_dist=pm.HalfNormal.dist(2.5), compute_corr=True
        )
        cov = pm.Deterministic("cov", chol @ chol.T)
        PerturbedLinReg(
            "obs",
            theta=theta,
            sigma=sigma,
            cov=cov,
            sigma_x=settings["sigma_x"],
            sigma_y=settings["sigma_y"],
            observed=data,
        )
    return model


def logreg_model(data, settings):
    d = data.shape[1] - 1
    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, 5.0, shape=d)
        tau = pm.HalfNormal("tau", 2.5, shape=d)
        PerturbedLogReg(
            "obs",
            theta=theta,
            cov=pm.math.diag(tau**2),
            sigma_x=settings["sigma_x"],
            epsilon_y=settings["epsilon_y"],
            approximation=settings.get("approximation", "quadrature"),
            observed=data,
        )
    return model


LIN_TYPICAL = dict(
    theta=np.array([1.0, -0.5]),
    sigma=0.3,
    cov=np.array([[1.0, 0.3], [0.3, 0.5]]),
    sigma_x=0.5,
    sigma_y=0.4,
)
LOG_TYPICAL = dict(
    theta=np.array([1.5, -1.0]),
    cov=np.array([[1.0, 0.3], [0.3, 0.5]]),
    sigma_x=0.5,
    epsilon_y=1.0,
)


def lin_batch_example():
    rng = np.random.default_rng(5)
    params = dict(LIN_TYPICAL, sigma_y=np.array([0.1, 0.4, 2.0, 5.0]))
    return params, rng.normal(size=(4, 3))


def log_batch_example():
    rng = np.random.default_rng(6)
    params = dict(LOG_TYPICAL, epsilon_y=np.array([0.1, 0.5, 2.0, 6.0]))
    value = np.column_stack([rng.normal(size=(4, 2)), [0.0, 1.0, 1.0, 0.0]])
    return params, value


CASES = [
    VectorCase(
        name="PerturbedLinReg",
        cls=PerturbedLinReg,
        core_ndim=LIN_CORE,
        event_ndim=1,
        typical=LIN_TYPICAL,
        reference=linreg_logp_ref,
        grid=linreg_grid,
        simulate=linreg_simulate,
        model=linreg_model,
        model_settings=[
            {"sigma_x": 0.05, "sigma_y": 0.05},
            {"sigma_x": 0.5, "sigma_y": 0.5},
            {"sigma_x": 20.0, "sigma_y": 10.0},
        ],
        bad_params=[
            ({"cov": np.array([[1.0, 2.0], [2.0, 1.0]])}, "cov"),
            ({"cov": np.array([[1.0, 0.2], [0.1, 1.0]])}, "cov"),
            ({"cov": np.eye(3)}, "cov"),
            ({"sigma": -1.0}, "sigma"),
            ({"sigma_x": np.array([0.5, 0.5, 0.5])}, "sigma_x"),
            ({"sigma_x": 0.0}, "sigma_x"),
            ({"sigma_y": np.nan}, "sigma_y"),
            ({"theta": np.array([np.nan, 1.0])}, "theta"),
        ],
        bad_observed=[
            (np.zeros((5, 4)), "columns"),
            (np.zeros((5, 2)), "columns"),
            (np.array([[0.0, 1.0, np.nan]]), "finite"),
        ],
        batch_example=lin_batch_example,
        # dense reference through scipy's multivariate normal (Cholesky of a 3x3, cond <= 1e3): m^2
        # u cond ~ 1e-12, 1e-10 relative of max(1, |logp|) leaves margin
        rtol=1e-10,
        draws_check=linreg_draws_check,
        shifted={"theta": np.array([1.3, -0.5])},
    ),
    VectorCase(
        name="PerturbedLogReg",
        cls=PerturbedLogReg,
        core_ndim=LOG_CORE,
        event_ndim=1,
        typical=LOG_TYPICAL,
        reference=logreg_logp_ref,
        grid=logreg_grid,
        simulate=logreg_simulate,
        model=logreg_model,
        model_settings=[
            {"sigma_x": 0.05, "epsilon_y": 0.05},
            {"sigma_x": 0.5, "epsilon_y": 1.0},
            {"sigma_x": 5.0, "epsilon_y": 8.0},
        ],
        bad_params=[
            ({"cov": np.array([[1.0, 2.0], [2.0, 1.0]])}, "cov"),
            ({"cov": np.eye(3)}, "cov"),
            ({"sigma_x": -0.5}, "sigma_x"),
            ({"epsilon_y": 0.0}, "epsilon_y"),
            ({"theta": np.array([np.inf, 1.0])}, "theta"),
        ],
        bad_observed=[
            (np.array([[0.1, 0.2, 2.0]]), "0 or 1"),
            (np.array([[0.1, 0.2, 0.5]]), "0 or 1"),
            (np.zeros((3, 2)), "columns"),
            (np.array([[np.nan, 0.2, 1.0]]), "finite"),
        ],
        batch_example=log_batch_example,
        # reference by Gauss-Hermite / adaptive quadrature over the logistic label
        # (tests/references.py) to ~1e-11: 1e-9 relative leaves margin over it and libm
        rtol=1e-9,
        draws_check=logreg_draws_check,
        shifted={"theta": np.array([0.0, -1.0])},
    ),
]
