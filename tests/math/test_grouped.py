"""Parameters given per group (``mu=mu_g[group]``): the grouped path (the kernel op with the
group index, the parameter-only terms lifted above the gather) gives the numbers of the
ungathered per-report computation (the same logp with a per-report parameter vector that is
not a gather), for the logp and the gradient summed per group.

The group index is unsorted and leaves groups empty; the parameter sets span the kernel's
linear-space region and the log-space forms outside it (mu far outside the clipping
interval, sigma much larger than the noise, epsilon above the linear region's limit).

The frequency oracles (k-RR, OUE, SUE, general unary encoding) take the per-distinct path
(the logp once per distinct (group, report) row, gathered back) and, for unary encodings, one
lookup table per group: checked the same way against ``p`` given as a per-report matrix.

Tolerance: the clipped normal's grouped kernel runs, per group, the same function on the same numbers as the
per-report kernel (the counting sort changes only the order in which reports are visited), so
the per-report logp is equal to the bit (the clipped exponential, a PyTensor graph, to
1e-14: see ``_check``); the per-group gradient is a sum of the same
per-report terms taken in a different order (scatter-add vs the per-report gradient summed
here with ``np.bincount``), so it agrees to 1e-12 relative to the sum of absolute terms.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest

import pymc_dpnoise as pmd

N_GROUPS = 7
RNG = np.random.default_rng(37)
# groups 2 and 5 are empty; the order is random
GROUP = RNG.permutation(np.repeat([0, 1, 3, 4, 6], 40)).astype("int64")
N = GROUP.size

# per group: (mu, sigma, epsilon), bounds (-1, 2); rows 2 and 5 belong to empty groups
NORMAL = np.array(
    [
        [0.5, 1.0, 1.0],  # linear region
        [-80.0, 1.0, 1.0],  # mu far below: beta > 30, log-space forms
        [0.0, 1.0, 1.0],
        [1.0, 40.0, 3.0],  # kappa > 5
        [2.5, 0.05, 120.0],  # epsilon > 50
        [0.0, 1.0, 1.0],
        [1e3, 2.0, 0.3],  # mu far above
    ]
)
# (lam, epsilon) per group
EXPONENTIAL = np.array(
    [[1.0, 1.0], [3.0, 0.5], [1.0, 1.0], [0.3, 2.0], [2.0, 5.0], [1.0, 1.0], [0.2, 0.5]]
)


def _reports(kind):
    rng = np.random.default_rng(1)
    if kind == "normal":
        return np.concatenate([[-1.0, 2.0], rng.uniform(-3.0, 4.0, N - 2)])
    return np.concatenate([[0.0, 3.0], rng.uniform(-2.0, 5.0, N - 2)])


def _dist(kind, params):
    if kind == "normal":
        mu, sigma, eps = params
        return pmd.LaplacePerturbedClippedNormal.dist(
            mu=mu, sigma=sigma, lower=-1.0, upper=2.0, epsilon=eps
        )
    lam, eps = params
    return pmd.LaplacePerturbedClippedExponential.dist(lam=lam, upper=3.0, epsilon=eps)


def _functions(kind, mode):
    """(grouped, per-report): each a function of the per-group parameter columns returning
    the per-report logp and the gradient of its sum w.r.t. each column (per group)."""
    n_par = 3 if kind == "normal" else 2
    cols = [pt.dvector(f"p{i}", shape=(N_GROUPS,)) for i in range(n_par)]
    per = [pt.dvector(f"r{i}", shape=(N,)) for i in range(n_par)]
    z = _reports(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lp_g = pm.logp(_dist(kind, [c[GROUP] for c in cols]), z)
        lp_r = pm.logp(_dist(kind, per), z)
        grouped = pytensor.function(cols, [lp_g, *pytensor.grad(lp_g.sum(), cols)], mode=mode)
        ungathered = pytensor.function(per, [lp_r, *pytensor.grad(lp_r.sum(), per)], mode=mode)
    return grouped, ungathered


def _check(kind, mode):
    table = NORMAL if kind == "normal" else EXPONENTIAL
    grouped, ungathered = _functions(kind, mode)
    lp, *grads = grouped(*table.T)
    ref_lp, *ref_grads = ungathered(*(c[GROUP] for c in table.T))
    assert np.all(np.isfinite(lp))
    if kind == "normal":
        np.testing.assert_array_equal(lp, ref_lp)
    else:
        # a graph, not a kernel: lifted, its parameter-only terms run on the group values;
        # PyTensor may fuse the lifted and the per-report graphs differently, which can change
        # the last bit
        np.testing.assert_allclose(lp, ref_lp, rtol=1e-14, atol=0)
    for g, r in zip(grads, ref_grads, strict=True):
        want = np.bincount(GROUP, r, minlength=N_GROUPS)
        scale = np.bincount(GROUP, np.abs(r), minlength=N_GROUPS)
        # grouped gradients are the same terms summed per group (in another order): n u of the
        # scale
        assert np.all(np.abs(g - want) <= 1e-12 * scale), (g, want)
        assert g[2] == g[5] == 0.0  # empty groups


def _grouped_op_used(kind, mode):
    grouped, _ = _functions(kind, mode)
    return any("grouped=True" in str(node.op) for node in grouped.maker.fgraph.apply_nodes)


@pytest.mark.parametrize("kind", ["normal", "exponential"])
def test_grouped_equals_per_report(kind):
    _check(kind, None)


def test_clipped_normal_takes_the_grouped_kernel():
    assert _grouped_op_used("normal", None)


@pytest.mark.backend
@pytest.mark.parametrize("kind", ["normal", "exponential"])
@pytest.mark.parametrize("mode", ["NUMBA", "JAX"])
def test_grouped_equals_per_report_backends(kind, mode):
    if mode == "JAX":
        pytest.importorskip("jax")
    _check(kind, mode)


def test_model_gradient_through_a_gathered_parameter():
    """``mu + effect[idx]`` in a model (the grouped path) gives the model's dlogp of the same
    parameters written without a gather (a one-hot matrix product, the per-report path): the
    grouped op's gradient must ask only for the inputs it differentiates (it once asked for
    the reports' gradient, a NullTypeGradError)."""
    from compile_modes import TEST_MODE

    rng = np.random.default_rng(5)
    n = 60
    idx = np.arange(n) % 3
    z = pmd.mechanisms.perturb_clipped(rng.normal(1.0, 2.0, n), -5.0, 5.0, 1.0, rng)

    def model(gather):
        with pm.Model() as m:
            mu = pm.Normal("mu", 0.0, 5.0)
            effect = pm.Normal("effect", 0.0, 1.0, shape=3)
            per = effect[idx] if gather else pt.dot(np.eye(3)[idx], effect)
            sigma = pm.Gamma("sigma", 2.0, 1.0)
            pmd.LaplacePerturbedClippedNormal(
                "z", mu=mu + per, sigma=sigma, lower=-5.0, upper=5.0, epsilon=1.0, observed=z
            )
        return m

    point = {"mu": 0.3, "effect": np.array([0.2, -0.4, 0.1]), "sigma_log__": 0.5}
    got, want = (
        m.compile_fn([m.logp(), m.dlogp()], inputs=m.value_vars, mode=TEST_MODE)(point)
        for m in (model(True), model(False))
    )
    # the same formulas summed in a different order (per group vs per report): rounding only
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-10)


# --------------------------------------------------------------------------------------------
# Frequency oracles: per distinct (group, report) row, and one lookup table per group
# --------------------------------------------------------------------------------------------

FREQUENCY = ["krr", "oue", "sue", "unary"]


def _simplex_rows(k):
    """One probability vector per group: Dirichlet draws, and a near one-hot row (tiny
    entries, where log(1 + (e^l - 1) t) is smallest)."""
    rows = np.random.default_rng(3).dirichlet(np.ones(k), size=N_GROUPS)
    rows[1] = np.full(k, 1e-12)
    rows[1, 0] = 1.0 - (k - 1) * 1e-12
    return rows


def _frequency_reports(fam, k):
    from pymc_dpnoise import mechanisms as mech

    rng = np.random.default_rng(4)
    items = rng.integers(0, k, size=N)
    if fam == "krr":
        return mech.krr_perturb(items, k, 2.0, rng)
    if fam == "unary":
        return mech.unary_encoding_perturb(items, k, 0.6, 0.2, rng)
    return getattr(mech, f"{fam}_perturb")(items, k, 2.0, rng)


def _frequency_dist(fam, p):
    kw = dict(keep_prob=0.6, flip_prob=0.2) if fam == "unary" else dict(epsilon=2.0)
    cls = {
        "krr": pmd.KRRLikelihood,
        "oue": pmd.OUELikelihood,
        "sue": pmd.SUELikelihood,
        "unary": pmd.UnaryEncodingLikelihood,
    }[fam]
    return cls.dist(p=p, **kw)


def _frequency_functions(fam, k, mode):
    base = pt.dmatrix("p", shape=(N_GROUPS, k))
    per = pt.dmatrix("r", shape=(N, k))
    z = _frequency_reports(fam, k)
    lp_g = pm.logp(_frequency_dist(fam, base[GROUP]), z)
    lp_r = pm.logp(_frequency_dist(fam, per), z)
    grouped = pytensor.function([base], [lp_g, pytensor.grad(lp_g.sum(), base)], mode=mode)
    ungathered = pytensor.function([per], [lp_r, pytensor.grad(lp_r.sum(), per)], mode=mode)
    return grouped, ungathered


def _check_frequency(fam, k, mode):
    table = _simplex_rows(k)
    grouped, ungathered = _frequency_functions(fam, k, mode)
    lp, g = grouped(table)
    ref_lp, r = ungathered(table[GROUP])
    assert lp.shape == (N,) and np.all(np.isfinite(lp))  # one term per report (pointwise)
    # theta^T z is a sum of k <= 10 terms in [0, 1]; the group table adds them in another
    # order than the per-report product: |dt| <= k 2^-53, and d logp / dt <= e^l - 1 < 7.4
    # (l = 2): at most 1e-14 nats, before the rounding of the rest (a few ulp of |logp| < 40)
    np.testing.assert_allclose(lp, ref_lp, rtol=1e-14, atol=1e-13)
    want = np.stack([np.bincount(GROUP, r[:, j], minlength=N_GROUPS) for j in range(k)], 1)
    scale = np.stack([np.bincount(GROUP, np.abs(r[:, j]), minlength=N_GROUPS) for j in range(k)], 1)
    # per-group sums of the same per-report derivatives in another order (scatter-add over
    # distinct rows); the derivative of each report is, as its logp, exact to a few ulp
    assert np.all(np.abs(g - want) <= 1e-12 * scale), (g, want)
    assert np.all(g[[2, 5]] == 0.0)  # empty groups
    return grouped


@pytest.mark.parametrize("k", [3, 10])
@pytest.mark.parametrize("fam", FREQUENCY)
def test_frequency_grouped_equals_per_report(fam, k):
    from compile_modes import TEST_MODE

    grouped = _check_frequency(fam, k, TEST_MODE)
    # the fast path is taken: no per-report (N, k) float array in the compiled graph (the
    # per-report path gathers p to (N, k)); k = 3 has at most 5 x 8 distinct rows (the
    # per-distinct path), k = 10 more than half of N for unary encodings (the group tables)
    shapes = [
        o.type.shape
        for node in grouped.maker.fgraph.apply_nodes
        for o in node.outputs
        if o.type.dtype == "float64"
    ]
    assert (N, k) not in shapes, shapes


@pytest.mark.backend
@pytest.mark.parametrize("fam", FREQUENCY)
def test_frequency_grouped_equals_per_report_numba(fam):
    _check_frequency(fam, 10, "NUMBA")


# --------------------------------------------------------------------------------------------
# Perturbed regressions: the report covariance (and its factorisation) once per group
# --------------------------------------------------------------------------------------------

THETA = np.array([[1.0, -0.5], [3.0, 2.0], [0.0, 0.0], [-2.0, 0.1], [0.2, 4.0], [0.0, 0.0],
                  [-6.0, -1.0]])  # fmt: skip


def _regression_dist(fam, theta):
    if fam == "linreg":
        return pmd.PerturbedLinReg.dist(
            theta=theta, sigma=0.7, cov=np.eye(2), sigma_x=0.5, sigma_y=0.5
        )
    return pmd.PerturbedLogReg.dist(theta=theta, cov=np.eye(2), sigma_x=0.5, epsilon_y=1.0)


def _check_regression(fam, mode):
    z = pm.draw(_regression_dist(fam, np.array([1.0, -0.5])), N, random_seed=2)
    base = pt.dmatrix("t", shape=(N_GROUPS, 2))
    per = pt.dmatrix("r", shape=(N, 2))
    lp_g = pm.logp(_regression_dist(fam, base[GROUP]), z)
    lp_r = pm.logp(_regression_dist(fam, per), z)
    grouped = pytensor.function([base], [lp_g, pytensor.grad(lp_g.sum(), base)], mode=mode)
    ungathered = pytensor.function([per], [lp_r, pytensor.grad(lp_r.sum(), per)], mode=mode)
    lp, g = grouped(THETA)
    ref_lp, r = ungathered(THETA[GROUP])
    assert lp.shape == (N,) and np.all(np.isfinite(lp))
    # the same formulas on the same numbers (per group instead of per report); PyTensor may
    # fuse the lifted graph differently: a few ulp of |logp| (< 100)
    np.testing.assert_allclose(lp, ref_lp, rtol=1e-13, atol=1e-12)
    want = np.stack([np.bincount(GROUP, r[:, j], minlength=N_GROUPS) for j in range(2)], 1)
    scale = np.stack([np.bincount(GROUP, np.abs(r[:, j]), minlength=N_GROUPS) for j in range(2)], 1)
    # per-group sums of the per-report derivatives, and for the linear regression the
    # pullback of the inverse (P Pbar P) taken once on the summed Pbar instead of per report:
    # products of 3 x 3 matrices reassociated, a few (m + N) u relative to the sum of
    # absolute terms (< 1e-13), bounded here with a factor 10
    assert np.all(np.abs(g - want) <= 1e-12 * scale), (g, want)
    assert np.all(g[[2, 5]] == 0.0)
    return grouped


@pytest.mark.parametrize("fam", ["linreg", "logreg"])
def test_regression_grouped_equals_per_report(fam):
    from compile_modes import TEST_MODE

    grouped = _check_regression(fam, TEST_MODE)
    if fam == "linreg":  # one covariance and factorisation per group
        shapes = [o.type.shape for node in grouped.maker.fgraph.apply_nodes for o in node.outputs]
        assert (N_GROUPS, 3, 3) in shapes  # the per-report path has no per-group matrix
        # summed over the reports, the quadratic forms become tr(P_g S_g) with each group's
        # scatter matrix S_g: no per-report term left in the graph
        base = pt.dmatrix("t", shape=(N_GROUPS, 2))
        z = pm.draw(_regression_dist(fam, np.array([1.0, -0.5])), N, random_seed=2)
        total = pytensor.function(
            [base], pm.logp(_regression_dist(fam, base[GROUP]), z).sum(), mode=TEST_MODE
        )
        shapes = [o.type.shape for node in total.maker.fgraph.apply_nodes for o in node.outputs]
        assert (N, 3, 3) not in shapes
        per_report = pytensor.function(
            [base], pm.logp(_regression_dist(fam, base[GROUP]), z), mode=TEST_MODE
        )
        # the same quadratic forms summed in another order (per group, then over groups):
        # relative rounding of a sum of 200 terms of one sign
        np.testing.assert_allclose(total(THETA), per_report(THETA).sum(), rtol=1e-12)
