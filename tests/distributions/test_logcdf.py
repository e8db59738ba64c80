"""Log CDFs of the scalar reports: accuracy, gradients, PyMC workflows, and the refusals.

Every ``pm.logcdf`` / ``pm.logccdf`` is compared with an independent reference written in the
tests from the model definition: :math:`F(z) = \\int F_{Lap}(z - x)\\, dQ(x)` by quadrature
for the clipped models (``references.py``) and by brute-force sums in extended precision for
the noisy counts (``counts_reference.py``), on grids reaching tiny and huge ε and far tails.
Metric: on the side where the reference :math:`F < 1/2` the log CDF, elsewhere the log
survival function, must match to ``1e-9 * max(1, |ref|)`` (so the small probability itself is
matched to relative error 1e-9, including :math:`1 - F \\approx 10^{-300}` far right), and
the other side to ``1e-12`` absolute.  One compiled function per family is evaluated on the
whole grid.
"""

from __future__ import annotations

import itertools

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from cases.clipped import _exp_grid, _normal_grid
from counts_reference import brute_binomial_log_cdfs, brute_poisson_log_cdfs
from references import (
    clipped_exponential_laplace_log_cdfs_ref,
    clipped_normal_laplace_log_cdfs_ref,
)

import pymc_dpnoise as pmd

_FNS: dict = {}


def _normal(value, mu, sigma, lower, upper, epsilon):
    return pmd.LaplacePerturbedClippedNormal.dist(mu, sigma, lower, upper, epsilon)


FAMILIES = {
    # name: (params in order, learned params, dist factory from vectors)
    "clipped_normal": (
        ("mu", "sigma", "lower", "upper", "epsilon"),
        ("mu", "sigma", "epsilon"),
        lambda v: pmd.LaplacePerturbedClippedNormal.dist(*v),
    ),
    "clipped_exponential": (
        ("lam", "upper", "epsilon"),
        ("lam", "epsilon"),
        lambda v: pmd.LaplacePerturbedClippedExponential.dist(*v),
    ),
    "binomial": (
        ("n", "p", "epsilon"),
        ("p", "epsilon"),
        lambda v: pmd.LaplaceNoisyBinomial.dist(*v),
    ),
    "clamped": (
        ("n", "p", "epsilon"),
        ("p", "epsilon"),
        lambda v: pmd.LaplaceNoisyBinomial.dist(*v, clamp=True),
    ),
    "poisson": (
        ("mu", "epsilon", "sensitivity"),
        ("mu", "epsilon"),
        lambda v: pmd.LaplaceNoisyPoisson.dist(*v),
    ),
}


def compiled(family):
    """(logcdf, logccdf, d logcdf / d learned..., d logccdf / d learned...), vector inputs."""
    if family not in _FNS:
        params, learned, make = FAMILIES[family]
        value = pt.dvector("value")
        ins = [pt.dvector(p) for p in params]
        rv = make(ins)
        lc, lcc = pm.logcdf(rv, value), pm.logccdf(rv, value)
        wrt = [ins[params.index(p)] for p in learned]
        grads = pt.grad(lc.sum(), wrt) + pt.grad(lcc.sum(), wrt)
        _FNS[family] = pytensor.function([value, *ins], [lc, lcc, *grads])
    return _FNS[family]


def _check(family, grid, ref_fn, tol=1e-9):
    """Compare with the reference; returns the worst error on the accurate side (for the log)."""
    params, _, _ = FAMILIES[family]
    lc, lcc, *grads = compiled(family)(grid["value"], *(grid[p] for p in params))
    for g in grads:
        assert np.all(np.isfinite(g)), "gradients must be finite on the whole grid"
    assert not np.any(np.isnan(lc)) and not np.any(np.isnan(lcc))
    ref = np.array(
        [ref_fn(*(grid[k][i] for k in ("value", *params))) for i in range(len(grid["value"]))]
    )
    r_lc, r_lcc = ref[:, 0], ref[:, 1]
    left = r_lc < -np.log(2.0)  # F < 1/2: the log CDF is the accurate side
    ours_acc, ref_acc = np.where(left, lc, lcc), np.where(left, r_lc, r_lcc)
    ours_oth, ref_oth = np.where(left, lcc, lc), np.where(left, r_lcc, r_lc)
    both_inf = np.isneginf(ours_acc) & np.isneginf(ref_acc)
    with np.errstate(invalid="ignore"):  # -inf - -inf where both are -inf (masked)
        err = np.abs(ours_acc - ref_acc) / np.maximum(1.0, np.abs(ref_acc))
    err = np.where(both_inf, 0.0, err)
    worst = int(np.argmax(err))
    assert err[worst] <= tol, {k: grid[k][worst] for k in grid} | dict(
        ours=(lc[worst], lcc[worst]), ref=ref[worst]
    )
    # the other side is log1mexp of the accurate one: its absolute error is at most F * err
    with np.errstate(invalid="ignore"):
        err_other = np.where(np.isneginf(ref_oth), 0.0, np.abs(ours_oth - ref_oth))
    assert np.max(err_other) <= tol, np.max(err_other)
    return float(err[worst])


# --------------------------------------------------------------------------------------------
# Accuracy against independent references
# --------------------------------------------------------------------------------------------


@pytest.mark.heavy
def test_clipped_normal_logcdf_matches_quadrature():
    worst = _check("clipped_normal", _normal_grid(), clipped_normal_laplace_log_cdfs_ref)
    print(f"clipped normal: worst relative error of the small tail {worst:.1e}")


def test_clipped_exponential_logcdf_matches_quadrature():
    worst = _check("clipped_exponential", _exp_grid(), clipped_exponential_laplace_log_cdfs_ref)
    print(f"clipped exponential: worst relative error of the small tail {worst:.1e}")


def _count_grid(ns, ps, eps):
    rows = []
    for n, p, e in itertools.product(ns, ps, eps):
        b = 1.0 / e
        ys = {-50 * b, -3.5, -0.2, 0.0, 0.5, n * p, n * p + 3 * b + 0.3, n * p - 2 * b}
        ys |= {n / 2 + 0.7, n - 0.5, float(n), n + 2.2, n + 50 * b}
        rows += [(y, n, p, e) for y in sorted(ys)]
    return dict(zip(("value", "n", "p", "epsilon"), np.array(rows).T, strict=True))


@pytest.mark.parametrize("clamp", [False, True], ids=["plain", "clamped"])
@pytest.mark.heavy
def test_noisy_binomial_logcdf_matches_brute_force(clamp):
    grid = _count_grid([0, 1, 10, 1000], [1e-6, 0.3, 1 - 1e-6], [0.001, 1.0, 100.0])
    big = _count_grid([10**5], [1e-6, 0.5, 1 - 1e-6], [0.01, 1.0, 100.0])
    grid = {k: np.concatenate([grid[k], big[k]]) for k in grid}

    def ref(y, n, p, e):
        return brute_binomial_log_cdfs(y, n, p, 1.0 / e, clamp=clamp)

    worst = _check("clamped" if clamp else "binomial", grid, ref)
    print(f"noisy binomial (clamp={clamp}): worst relative error {worst:.1e}")


@pytest.mark.slow
def test_noisy_binomial_logcdf_large_n():
    grid = _count_grid([10**7], [1e-6, 0.3, 1 - 1e-6], [0.01, 1.0, 100.0])
    worst = _check(
        "binomial", grid, lambda y, n, p, e: brute_binomial_log_cdfs(y, n, p, 1 / e), tol=1e-8
    )
    print(f"noisy binomial n = 1e7: worst relative error {worst:.1e}")


def test_noisy_poisson_logcdf_matches_brute_force():
    rows = []
    for mu, e, sens in itertools.product([1e-3, 0.5, 30.0, 1e4], [0.001, 1.0, 100.0], [1.0, 3.0]):
        b = sens / e
        ys = {-50 * b, -2.5, 0.0, 0.3, mu, mu - 2 * b, mu + 3 * b + 0.4, mu + 50 * b}
        rows += [(y, mu, e, sens) for y in sorted(ys)]
    grid = dict(zip(("value", "mu", "epsilon", "sensitivity"), np.array(rows).T, strict=True))
    worst = _check("poisson", grid, lambda y, mu, e, sens: brute_poisson_log_cdfs(y, mu, sens / e))
    print(f"noisy Poisson: worst relative error {worst:.1e}")


def test_clamped_binomial_cdf_jumps_at_the_atoms():
    """F_Z(0) is the atom P(z = 0); F_Z jumps to 1 at n; F_Z = 0 below 0."""
    rv = pmd.LaplaceNoisyBinomial.dist(20, 0.3, 0.5, clamp=True)
    z = np.array([-0.5, 0.0, 19.999, 20.0, 25.0])
    lc = pm.logcdf(rv, z).eval()
    atom0 = pm.logp(rv, 0.0).eval()  # log P(z = 0)
    assert lc[0] == -np.inf and lc[1] == pytest.approx(atom0, rel=1e-12)
    assert lc[2] < 0 and lc[3] == 0.0 and lc[4] == 0.0
    ref = brute_binomial_log_cdfs(19.999, 20, 0.3, 2.0)[0]
    # brute-force log-space sum over every count (exact terms, logsumexp) vs the closed form
    # through libm (few ulp, condition ~ 1): 1e-12 is ~9000 ulp
    assert lc[2] == pytest.approx(ref, rel=1e-12)


def test_gradients_match_finite_differences():
    """d logcdf / d theta against central differences, on a typical point of every family."""
    points = {
        "clipped_normal": dict(mu=0.4, sigma=0.8, lower=-1.0, upper=1.0, epsilon=2.0),
        "clipped_exponential": dict(lam=0.7, upper=3.0, epsilon=1.5),
        "binomial": dict(n=40.0, p=0.3, epsilon=0.5),
        "clamped": dict(n=40.0, p=0.3, epsilon=0.5),
        "poisson": dict(mu=12.0, epsilon=0.5, sensitivity=1.0),
    }
    values = {
        "clipped_normal": [-3.0, -0.5, 0.2, 0.9, 4.0],
        "clipped_exponential": [-4.0, 0.5, 2.0, 7.0],
        "binomial": [-10.0, 5.5, 12.3, 30.0, 60.0],
        "clamped": [0.0, 5.5, 12.3, 30.0],
        "poisson": [-10.0, 3.3, 12.3, 40.0],
    }
    for family, point in points.items():
        params, learned, _ = FAMILIES[family]
        z = np.array(values[family])

        def at(overrides, point=point, params=params, z=z, family=family):
            args = [np.full(z.shape, overrides.get(p, point[p])) for p in params]
            return compiled(family)(z, *args)

        out = at({})
        for i, name in enumerate(learned):
            h = 1e-6 * max(1.0, point[name])
            up, down = at({name: point[name] + h}), at({name: point[name] - h})
            for j, (g_idx, f_idx) in enumerate([(2 + i, 0), (2 + len(learned) + i, 1)]):
                fd = (up[f_idx] - down[f_idx]) / (2 * h)
                np.testing.assert_allclose(
                    out[g_idx], fd, rtol=1e-5, atol=1e-7, err_msg=f"{family} {name} {j}"
                )


# --------------------------------------------------------------------------------------------
# PyMC workflows: Censored, Truncated
# --------------------------------------------------------------------------------------------


def test_truncated_report_density_integrates_to_one():
    """pm.Truncated uses logcdf and logccdf for the normaliser; its density integrates to 1."""
    from scipy import integrate

    base = pmd.LaplacePerturbedClippedNormal.dist(0.4, 0.8, -1.0, 1.0, 2.0)
    rv = pm.Truncated.dist(base, lower=-0.5, upper=1.5)
    x = np.linspace(-0.5, 1.5, 4001)
    dens = np.exp(pm.logp(rv, x).eval())
    assert integrate.simpson(dens, x=x) == pytest.approx(1.0, abs=1e-8)
    draws = pm.draw(rv, draws=200, random_seed=1)  # rejection sampling (no icdf)
    assert draws.min() >= -0.5 and draws.max() <= 1.5


def test_censored_noisy_count_logp_uses_the_cdfs():
    base = pmd.LaplaceNoisyPoisson.dist(12.0, 0.5, 1.0)
    rv = pm.Censored.dist(base, lower=0.0, upper=20.0)
    lp = pm.logp(rv, np.array([0.0, 7.0, 20.0])).eval()
    # Censored's atom is the base's logcdf: the same graph on the same value, a few ulp from the
    # rewrite order
    assert lp[0] == pytest.approx(pm.logcdf(base, 0.0).eval(), rel=1e-12)
    # Censored's interior is the base's logp: the same graph on the same value, a few ulp from the
    # rewrite order
    assert lp[1] == pytest.approx(pm.logp(base, 7.0).eval(), rel=1e-12)
    # Censored's upper atom is the base's logccdf: the same graph on the same value, a few ulp from
    # the rewrite order
    assert lp[2] == pytest.approx(pm.logccdf(base, 20.0).eval(), rel=1e-12)


@pytest.mark.backend  # runs NUTS: the default mode's compile is cheaper than sampling on the Python VM
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_censored_clipped_report_samples_with_nuts():
    """A censored clipped-normal report model samples with NUTS and recovers mu."""
    rng = np.random.default_rng(3)
    z = pmd.mechanisms.perturb_clipped(rng.normal(0.5, 1.0, 300), -2.0, 2.0, 2.0, rng)
    z = np.clip(z, -3.0, 3.0)  # the analyst only sees the reports censored to [-3, 3]
    with pm.Model():
        mu = pm.Normal("mu", 0.0, 2.0)
        base = pmd.LaplacePerturbedClippedNormal.dist(mu, 1.0, -2.0, 2.0, 2.0)
        pm.Censored("z", base, lower=-3.0, upper=3.0, observed=z)
        idata = pm.sample(
            draws=200,
            tune=200,
            chains=1,
            random_seed=4,
            progressbar=False,
            compute_convergence_checks=False,
        )
    post = idata.posterior["mu"].values.ravel()
    assert np.all(np.isfinite(post))
    assert abs(post.mean() - 0.5) < 4 * post.std() + 0.05


# --------------------------------------------------------------------------------------------
# Refusals: icdf of the scalar reports, every CDF of the vector reports
# --------------------------------------------------------------------------------------------


def _vector_dists():
    th = np.array([0.5, 0.3, 0.2])
    return {
        "OUELikelihood": (pmd.OUELikelihood.dist(p=th, epsilon=1.0), np.zeros(3)),
        "SUELikelihood": (pmd.SUELikelihood.dist(p=th, epsilon=1.0), np.zeros(3)),
        "UnaryEncodingLikelihood": (
            pmd.UnaryEncodingLikelihood.dist(p=th, keep_prob=0.6, flip_prob=0.3),
            np.zeros(3),
        ),
        "KRRLikelihood": (pmd.KRRLikelihood.dist(p=th, epsilon=1.0), 1),
        "PerturbedLinReg": (
            pmd.PerturbedLinReg.dist(
                theta=np.ones(1), sigma=1.0, cov=np.eye(1), sigma_x=1.0, sigma_y=1.0
            ),
            np.zeros(2),
        ),
        "PerturbedLogReg": (
            pmd.PerturbedLogReg.dist(theta=np.ones(1), cov=np.eye(1), sigma_x=1.0, epsilon_y=1.0),
            np.zeros(2),
        ),
        "LaplacePerturbedClippedNormalSummary": (
            pmd.LaplacePerturbedClippedNormalSummary.dist(0.0, 1.0, -1.0, 1.0, 1.0, 10, 4),
            np.zeros((6, 4)),
        ),
        "LaplacePerturbedClippedExponentialSummary": (
            pmd.LaplacePerturbedClippedExponentialSummary.dist(1.0, 1.0, 1.0, 10, 4),
            np.zeros((6, 4)),
        ),
        "SSNormalApprox": (
            pmd.SSNormalApprox.dist(np.zeros(2), np.eye(2), 10.0, np.eye(5), "logistic"),
            np.zeros(5),
        ),
    }


@pytest.mark.parametrize("fn", [pm.logcdf, pm.logccdf, pm.icdf], ids=lambda f: f.__name__)
def test_vector_reports_refuse_cdfs_naming_the_class(fn):
    for name, (rv, value) in _vector_dists().items():
        with pytest.raises(NotImplementedError, match=f"^{name}: "):
            fn(rv, value)


@pytest.mark.parametrize(
    "rv",
    [
        pmd.LaplacePerturbedClippedNormal.dist(0.0, 1.0, -1.0, 1.0, 1.0),
        pmd.LaplacePerturbedClippedExponential.dist(1.0, 2.0, 1.0),
        pmd.LaplaceNoisyBinomial.dist(10, 0.3, 1.0),
        pmd.LaplaceNoisyBinomial.dist(10, 0.3, 1.0, clamp=True),
        pmd.LaplaceNoisyPoisson.dist(3.0, 1.0, 1.0),
    ],
    ids=["clipped_normal", "clipped_exponential", "binomial", "clamped", "poisson"],
)
def test_scalar_reports_refuse_icdf_with_reason(rv):
    with pytest.raises(NotImplementedError, match="closed-form inverse"):
        pm.icdf(rv, 0.5)
