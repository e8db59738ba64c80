"""Perturbed-input logistic regression: weighted moments around a pilot, one pass per pilot."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from .engines import check_reports, engine_of, real_param, report_chunks


@dataclasses.dataclass(frozen=True)
class LogRegSummary:
    r"""Summary of N perturbed-input logistic-regression reports ``[z_x, z_y]``.

    Built by :func:`summarize_logreg`; pass it as ``observed`` to
    :class:`~pymc_dpnoise.PerturbedLogRegSummary`.  It holds the feature scatter matrix
    (exact Gaussian term), the coefficients of the third-order expansion of the label term
    around the pilot :math:`(\beta_0, v_0)` and the fourth-moment tensor of the signed
    features that bounds its remainder (:mod:`pymc_dpnoise.math.logreg_summary`):
    O(d⁴) numbers whatever N.

    Attributes
    ----------
    packed : ndarray
        All numbers in the layout of :func:`pymc_dpnoise.math.logreg_summary.packed_layout`.
    d : int
    theta_pilot : ndarray, shape (d,)
        The θ the pilot was computed from (a good initial value for samplers).
    cov_pilot : ndarray, shape (d, d)
        The feature covariance used for the pilot (``cov`` if given, else the moment
        estimate :math:`S/N - \Sigma_*`).
    sigma_x : ndarray, shape (d,)
    passes : int
        Passes over the full data (the first one also drew the pilot's subsample).
    pilot_shift : float
        Distance (in posterior standard deviations of the expansion's maximiser) between the
        last pilot and the maximiser of its expansion.
    mode_bound : float
        The remainder bound (nats) at that maximiser (with ``cov_pilot``): about where the
        posterior will be, known before sampling.
    probe_bound : float
        The largest remainder bound (nats) at that maximiser and 4 posterior sd from it along
        the principal axes (with ``cov_pilot``).
    pilot_status : str or None
        None when every iterative estimate behind the pilot converged; otherwise what did not
        (the pilot fit, the expansion's maximiser, or the recentring) and what was done
        instead.  :func:`summarize_logreg` also warns with it.
    """

    packed: np.ndarray
    d: int
    theta_pilot: np.ndarray
    cov_pilot: np.ndarray
    sigma_x: np.ndarray
    passes: int = 1
    pilot_shift: float = float("nan")
    mode_bound: float = float("nan")
    probe_bound: float = float("nan")
    pilot_status: str | None = None

    def __array__(self, dtype=None, copy=None):
        return self.packed if dtype is None else self.packed.astype(dtype)

    @property
    def fields(self) -> dict:
        from ..math.logreg_summary import unpack

        return unpack(self.packed, self.d)

    @property
    def n(self) -> int:
        return int(self.packed[0])

    @property
    def epsilon_y(self) -> float:
        return float(self.packed[1])

    def bound(self, theta, cov=None, sigma_x=None) -> np.ndarray:
        r"""The remainder bound (nats) at one θ or at draws ``(..., d)``.

        ``cov`` and ``sigma_x`` default to the pilot's; pass arrays with the same leading
        shape as ``theta`` for draws of a model where they are parameters.
        """
        from ..math.logreg_summary import beta_v, label_polynomial_numpy

        theta = np.asarray(theta, dtype=np.float64)
        lead = theta.shape[:-1]
        cov = self.cov_pilot if cov is None else np.asarray(cov, dtype=np.float64)
        sx = self.sigma_x if sigma_x is None else np.asarray(sigma_x, dtype=np.float64)
        cov = np.broadcast_to(cov, (*lead, self.d, self.d))
        sx = np.broadcast_to(sx, (*lead, self.d))
        out = np.empty(lead)
        fields = self.fields
        for idx in np.ndindex(lead):
            beta, v = beta_v(theta[idx], cov[idx], sx[idx])
            out[idx] = label_polynomial_numpy(fields, beta, v)["bound"]
        return out


def _split_reports(chunk, d):
    if chunk.shape[1] != d + 1:
        raise ValueError(f"data: expected d + 1 = {d + 1} report columns, got {chunk.shape[1]}")
    zx, zy = chunk[:, :d], chunk[:, d]
    bad = (zy != 0.0) & (zy != 1.0)
    if bad.any():
        raise ValueError(
            "data: the last column (reported label z_y) must be 0 or 1; found "
            f"{np.unique(zy[bad])[:5]}"
        )
    return zx, zy


def _penalised(fun, Bmat, Ahat, ridge):
    """``th -> (F - ridge |th|^2 / 2, gradient, Hessian)`` in theta (see :func:`_newton_theta`)."""
    eye = np.eye(Bmat.shape[1])

    def eval_at(th):
        beta = Bmat @ th
        v = max(float(th @ Ahat @ th), 0.0)
        try:
            f, gb, gv, hbb, hbv, hvv = fun(beta, v)
        except OverflowError:  # a trial step far out: rejected by the line search
            nan = np.full((len(th), len(th)), np.nan)
            return -np.inf, nan[0], nan
        dv = 2.0 * Ahat @ th
        g = Bmat.T @ gb + gv * dv - ridge * th
        h = (
            Bmat.T @ hbb @ Bmat
            + np.outer(Bmat.T @ hbv, dv)
            + np.outer(dv, Bmat.T @ hbv)
            + hvv * np.outer(dv, dv)
            + gv * 2.0 * Ahat
            - ridge * eye
        )
        return f - 0.5 * ridge * th @ th, g, h

    return eval_at


def _newton_theta(fun, theta, Bmat, Ahat, *, max_iter=60, ridge=1e-8):
    """Maximise F(beta(theta), v(theta)) - ridge |theta|^2 / 2 by damped Newton in theta.

    ``fun(beta, v)`` returns (F, g_beta, g_v, h_bb, h_bv, h_vv); beta = Bmat theta,
    v = theta' Ahat theta.  Each step is the Newton step of the Hessian shifted until it is
    negative definite (Levenberg damping), then halved until the penalised objective does not
    decrease (backtracking line search), so the objective never goes down.

    Returns ``(theta, hessian in theta at the end, status)``.  ``status`` is None when the
    maximum is found and identified by ``F`` itself, else why not: the iteration did not
    settle within ``max_iter`` steps (or left the finite values), or the curvature of ``F``
    at the end is at most ``100 * ridge`` along some direction, i.e. the data do not
    determine theta there and the tiny ridge alone stopped the iteration (a label term that
    saturates, as with a small label budget and few reports, has its maximum at infinity).
    """
    n = len(theta)
    eval_at = _penalised(fun, Bmat, Ahat, ridge)
    f, g, h = eval_at(theta)
    if not (np.isfinite(f) and np.all(np.isfinite(g)) and np.all(np.isfinite(h))):
        return theta, h, "the objective is not finite at the starting point"
    settled = False
    for _ in range(max_iter):
        lam = 0.0
        scale = np.abs(np.diag(h)).max() + 1e-12
        while True:
            hh = h - lam * scale * np.eye(n)
            try:
                np.linalg.cholesky(-hh)
                break
            except np.linalg.LinAlgError:
                lam = max(2 * lam, 1e-6)
        step = np.linalg.solve(-hh, g)
        t = 1.0
        while t > 1e-8:
            f_new, g_new, h_new = eval_at(theta + t * step)
            if np.isfinite(f_new) and f_new >= f - 1e-12 * abs(f):
                break
            t *= 0.5
        if not (np.isfinite(f_new) and f_new >= f - 1e-12 * abs(f)):
            break  # no step along the direction increases the objective: stuck
        theta = theta + t * step
        decrement = float(g @ step)
        f, g, h = f_new, g_new, h_new
        if decrement < 1e-10 and t == 1.0:
            settled = True
            break
    if not settled:
        return theta, h, f"the Newton iteration did not settle within {max_iter} steps"
    curvature = np.linalg.eigvalsh(-0.5 * (h + h.T)) - ridge  # of F alone, without the ridge
    if curvature.min() <= 100.0 * ridge:
        return (
            theta,
            h,
            (
                "the label term does not determine theta (its curvature at the maximum is "
                f"{max(curvature.min(), 0.0):.2g}: the maximum is at infinity, |theta| = "
                f"{np.linalg.norm(theta):.3g} reached only through the tiny ridge)"
            ),
        )
    return theta, h, None


def _fmt(theta) -> str:
    return "[" + ", ".join(f"{x:.4g}" for x in np.asarray(theta).ravel()) + "]"


#: largest label budget summarize_logreg accepts (1 - rho = sigmoid(-10) = 4.5e-5: an absolute
#: quadrature error of 1e-15 in E[sigmoid] stays below 1e-10 relative to the label probability)
MAX_LOGREG_EPSILON = 10.0


def summarize_logreg(
    data,
    sigma_x,
    epsilon_y,
    *,
    cov=None,
    columns=None,
    con=None,
    pilot=None,
    n_pilot=200_000,
    max_passes=3,
    shift_tol=0.25,
    recentre_bound=0.05,
    seed=0,
) -> LogRegSummary:
    r"""Summarise logistic-regression reports ``[z_x, z_y]`` around a pilot, one pass per pilot.

    1. A pass draws a Bernoulli subsample of about ``n_pilot`` reports and the scatter
       matrix; the pilot θ is the maximum-likelihood estimate of the label term on the
       subsample (damped Newton), with the feature covariance ``cov`` or, if None, the moment
       estimate :math:`S/N - \mathrm{diag}(\sigma_x^2)` (eigenvalues floored).
    2. A pass computes the summary at the pilot (:func:`pymc_dpnoise.math.logreg_summary.chunk_moments`).
    3. The maximiser of that expansion is found in memory.  If it is more than ``shift_tol``
       of its posterior standard deviations (Mahalanobis, from the expansion's Hessian) from
       the pilot *and* the bound exceeds ``recentre_bound`` nats at it or 4 sd from it along
       the principal axes, it becomes the pilot and step 2 is repeated (at most
       ``max_passes`` passes after the first).  The fourth-moment tensor does not depend on
       the pilot and is accumulated in the first pass.

    Parameters
    ----------
    data : array_like, path, DuckDB relation or dataframe
        ``(N, d + 1)`` report rows, label last (see :func:`aggregate` for the engines).
    sigma_x : float or array_like
        Feature noise sd (scalar or one per feature).
    epsilon_y : float
        Budget of the label's randomized response (the expansion's weights depend on it).
    cov : array_like, optional
        Known feature covariance for the pilot (the model may still learn it).
    columns : sequence of str, optional
        Report columns in order (files, relations, dataframes).
    pilot : array_like, optional
        A θ to expand around instead of step 1 (e.g. a posterior mean); step 3 still runs.

    Returns
    -------
    LogRegSummary
    """
    from ..math.logreg_summary import (
        beta_v,
        chunk_moments,
        fourth_moments,
        label_derivatives,
        label_polynomial_numpy,
        unpack,
    )

    eps = real_param("epsilon_y", epsilon_y)
    if not (np.isfinite(eps) and 0 < eps <= MAX_LOGREG_EPSILON):
        raise ValueError(
            f"epsilon_y: must be in (0, {MAX_LOGREG_EPSILON:g}] for the summary, got {eps} (above, "
            "1 - rho < 5e-5 and the weights' quadrature error, relative to it, is no longer "
            "negligible: use PerturbedLogReg)"
        )
    engine = engine_of(data)
    n_total = check_reports(data, engine, columns, con=con)
    rng = np.random.default_rng(seed)
    frac = min(1.0, n_pilot / n_total)
    sample, scatter, m4, d, notes = [], None, None, None, []
    for chunk in report_chunks(data, engine, columns, con):
        d = chunk.shape[1] - 1 if d is None else d
        zx, zy = _split_reports(chunk, d)
        scatter = zx.T @ zx if scatter is None else scatter + zx.T @ zx
        m4 = fourth_moments(zx) if m4 is None else m4 + fourth_moments(zx)
        if pilot is None:
            keep = rng.random(len(chunk)) < frac
            sample.append(chunk[keep])
    if d is None or d < 1:
        raise ValueError("data: reports need at least one feature column and the label")
    sx = np.broadcast_to(np.asarray(sigma_x, dtype=np.float64), (d,)).copy()
    if not np.all(np.isfinite(sx) & (sx > 0)):
        raise ValueError(f"sigma_x: must be finite and > 0, got {sigma_x!r}")
    if cov is None:
        est = scatter / n_total - np.diag(sx**2)
        lam, vec = np.linalg.eigh(0.5 * (est + est.T))
        floor = 1e-3 * max(float(np.trace(scatter) / n_total / d), 1e-300)
        cov_p = (vec * np.maximum(lam, floor)) @ vec.T
    else:
        cov_p = np.asarray(cov, dtype=np.float64)
        if cov_p.shape != (d, d):
            raise ValueError(f"cov: expected shape ({d}, {d}), got {cov_p.shape}")
    sz = cov_p + np.diag(sx**2)
    Bmat = np.linalg.solve(sz, cov_p)
    Ahat = cov_p @ np.linalg.solve(sz, np.diag(sx**2))
    Ahat = 0.5 * (Ahat + Ahat.T)

    if pilot is None:
        smp = np.concatenate(sample) if sample else np.empty((0, d + 1))
        w = smp[:, :d] * (2.0 * smp[:, d] - 1.0)[:, None]
        orders = ((0, 0), (1, 0), (0, 1), (2, 0), (1, 1), (0, 2))

        def sample_fun(beta, v):
            kw = label_derivatives(w @ beta, v, eps, orders=orders)
            return (
                float(kw[(0, 0)].sum()),
                kw[(1, 0)] @ w,
                float(kw[(0, 1)].sum()),
                (w * kw[(2, 0)][:, None]).T @ w,
                kw[(1, 1)] @ w,
                float(kw[(0, 2)].sum()),
            )

        theta0, _, status = _newton_theta(sample_fun, np.zeros(d), Bmat, Ahat)
        if status is not None:
            # a bounded fallback: theta = 0 (no effect of the features), where the label term
            # is smooth and the expansion's step 3 can still move it if the data say so
            notes.append(
                f"the pilot fit on {len(smp)} reports did not converge ({status}); the summary "
                "is expanded around theta = 0 instead"
            )
            theta0 = np.zeros(d)
    else:
        theta0 = np.broadcast_to(np.asarray(pilot, dtype=np.float64), (d,)).copy()

    passes, shift = 1, float("nan")
    while True:
        beta0, v0 = beta_v(theta0, cov_p, sx)
        acc = None
        for chunk in report_chunks(data, engine, columns, con):
            zx, zy = _split_reports(chunk, d)
            m = chunk_moments(zx, zy, beta0, v0, eps, fourth=False)
            if acc is None:
                acc = m
            else:
                for key, val in m.items():
                    acc[key] = acc[key] + val
        passes += 1
        packed = np.concatenate(
            [
                [float(acc["n"]), eps, v0],
                beta0,
                acc["scatter"].ravel(),
                [acc[f"c0{j}"] for j in range(4)],
                np.stack([acc[f"c1{j}"] for j in range(3)]).ravel(),
                np.stack([acc[f"c2{j}"] for j in range(2)]).ravel(),
                acc["c30"].ravel(),
                m4.ravel(),
            ]
        )
        if not np.all(np.isfinite(packed)):
            raise ValueError("data: the summary is not finite (features too large?)")
        fields = unpack(packed, d)

        def poly_fun(beta, v, fields=fields):
            r = label_polynomial_numpy(fields, beta, v)
            return r["value"], r["g_beta"], r["g_v"], r["h_bb"], r["h_bv"], r["h_vv"]

        theta1, hess, status = _newton_theta(poly_fun, theta0.copy(), Bmat, Ahat)
        if status is not None:
            # the expansion (a polynomial, unbounded far from the pilot) has no maximum the
            # data determine: keep the pilot and report the bounds around it
            notes.append(
                f"the maximiser of the expansion around theta = {_fmt(theta0)} was not found "
                f"({status}); the pilot is kept and the bounds are reported around it"
            )
            theta1, hess = theta0, _penalised(poly_fun, Bmat, Ahat, 1e-8)(theta0)[2]
        diff = theta1 - theta0
        shift = float(np.sqrt(max(diff @ (-hess) @ diff, 0.0)))
        # the bound at the expansion's maximiser and 4 sd away along the principal axes
        lam, vec = np.linalg.eigh(-0.5 * (hess + hess.T))
        # an axis without curvature has no posterior sd from the expansion: nothing certifies
        # the summary along it (the bound 4 sd away is infinite)
        flat = bool(np.any(lam <= 0.0))
        sd_axes = vec / np.sqrt(np.where(lam > 0.0, lam, 1.0))
        probes = [theta1] + [
            theta1 + sgn * 4.0 * sd_axes[:, k] for k in range(d) for sgn in (-1, 1) if lam[k] > 0
        ]
        at = []
        for th in probes:
            beta, v = beta_v(th, cov_p, sx)
            try:
                at.append(label_polynomial_numpy(fields, beta, v)["bound"])
            except OverflowError:  # the bound itself is beyond the doubles
                at.append(float("inf"))
        worst = float("inf") if flat else max(at)
        if shift <= shift_tol or worst <= recentre_bound or status is not None:
            break
        if passes > max_passes:
            notes.append(
                f"the recentring did not settle within max_passes = {max_passes} passes: the "
                f"expansion's maximiser is still {shift:.3g} sd from the pilot and the bound "
                f"reaches {worst:.3g} nats around it"
            )
            break
        theta0 = theta1
    if notes:
        warnings.warn(
            "summarize_logreg: " + "; ".join(notes) + f". The error bound is {at[0]:.3g} nats "
            f"at the expansion's maximiser and up to {worst:.3g} nats 4 sd from it: after "
            "sampling, check_logreg_summary says whether the posterior is where the summary "
            "is accurate; if not, fit PerturbedLogReg on the reports (exact), or rebuild the "
            "summary with pilot= a theta near the posterior (e.g. a fit of PerturbedLogReg on "
            "a subsample).",
            UserWarning,
            stacklevel=2,
        )
    return LogRegSummary(
        packed=packed,
        d=d,
        theta_pilot=theta0,
        cov_pilot=cov_p,
        sigma_x=sx,
        passes=passes,
        pilot_shift=shift,
        mode_bound=at[0],
        probe_bound=worst,
        pilot_status="; ".join(notes) or None,
    )
