"""The JAX kernel of the clipped-normal op (``pymc_dpnoise.math._clipped_normal_jax``).

On the JAX backend, with constant reports, bounds and epsilon (observed data), the op's value
is a ``custom_jvp`` function of (mu, sigma) with the closed-form derivatives, computed by the
Numba kernel's formulas written in ``jax.numpy``.  Checked here against the Numba kernel on
the extreme grids of ``test_distributions.py`` (per-report and length-1 parameters), under
``vmap`` and ``grad``, and the whole through PyTensor's JAX linker and PyMC's
``get_jaxified_logp`` (what numpyro differentiates).  Every test jits JAX functions:
``backend``.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from compile_modes import TEST_MODE
from distributions.test_distributions import CASES, _extreme_normal_grid, _normal_grid, compiled

import pymc_dpnoise as pmd
from pymc_dpnoise.math._clipped_normal_kernel import _clipped_normal_kernel

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
# PyTensor's JAX backend turns JAX's 64-bit mode on when it is imported (floatX float64), as
# it does for users; the package itself never changes jax.config (test_jax_dispatch.py)
pytest.importorskip("pytensor.link.jax.dispatch")

pytestmark = [pytest.mark.backend, pytest.mark.xdist_group("clipped_normal_jax")]

_KEYS = ("value", "mu", "sigma", "lower", "upper", "epsilon")

GRIDS = {
    "grid": _normal_grid,
    "extreme": lambda: _extreme_normal_grid(False),
}


def _jax_kernel(*args, **kw):
    from pymc_dpnoise.math._clipped_normal_jax import kernel

    return kernel(*args, **kw)


def _check_against_numba(z, mu, sigma, lower, upper, eps, out):
    """``out`` (the JAX kernel's log p, d/dmu, d/dsigma) against the Numba kernel.

    log p to 1e-13 relative (measured 3.6e-15 on the broad extreme grid).  The derivatives
    are sums of terms that nearly cancel at the extremes (e.g. sigma = 2e-100 with
    |alpha| = 3e99: d/dsigma is 0 in Numba and 1e75 in JAX, terms of 1e199); XLA contracts
    multiply-adds into FMAs, so they are compared to 1e-9 relative plus 1e-14 of the sum of
    the magnitudes of their terms, (1 + kappa + |alpha| + |beta| + |zeta|)^p / sigma with
    p = 1 for mu and 2 for sigma (zeta for reports inside the interval only).  Measured:
    worst 1.1e-10 relative, 2.5e-16 of that scale (broad extreme grid)."""
    lp, dmu, dsig = _clipped_normal_kernel(
        *(np.ascontiguousarray(x, dtype=np.float64) for x in (z, mu, sigma, lower, upper, eps))
    )
    jl, jm, js = (np.asarray(x) for x in out)
    for name, x in (("logp", jl), ("d/dmu", jm), ("d/dsigma", js)):
        assert np.all(np.isfinite(x)), name
    err = np.abs(jl - lp) / np.maximum(1.0, np.abs(lp))
    # XLA and Numba libm (few ulp each) through a log density whose condition is ~10-100 at the
    # grid's extremes: 1e-12 relative of max(1, |logp|) is ~9000 ulp (was 1e-13, ~900 ulp: below
    # the 1e3-ulp margin for libm-based values)
    assert err.max() <= 1e-12, err.max()
    s = (upper - lower) / eps
    al, be = (lower - mu) / sigma, (upper - mu) / sigma
    inside = (z > lower) & (z < upper)
    ze = np.where(inside, (z - mu) / sigma, 0.0)
    with np.errstate(over="ignore"):
        t = 1.0 + sigma / s + np.abs(al) + np.abs(be) + np.abs(ze)
        scales = (t / sigma, t * t / sigma)
    for name, x, ref, scale in (("d/dmu", jm, dmu, scales[0]), ("d/dsigma", js, dsig, scales[1])):
        scale = np.broadcast_to(scale, x.shape)
        bad = np.abs(x - ref) > 1e-9 * np.abs(ref) + 1e-14 * scale
        assert not bad.any(), (name, np.flatnonzero(bad)[:5], x[bad][:5], ref[bad][:5])


@pytest.mark.parametrize("grid", list(GRIDS))
def test_jax_kernel_matches_numba_kernel_per_report_parameters(grid):
    """Per-report parameters (every input a vector of the grid's length), jitted."""
    g = GRIDS[grid]()
    z, mu, sigma, lower, upper, eps = (g[k] for k in _KEYS)
    f = jax.jit(_jax_kernel(z, lower, upper, eps, grad=True))
    out = f(jnp.asarray(mu), jnp.asarray(sigma))
    _check_against_numba(z, mu, sigma, lower, upper, eps, out)


#: length-1 parameter sets: noise scale and sigma from 1e-100 to 1e100 times the interval,
#: mu inside and far out on both sides
_SCALAR_SETS = [
    (0.3, 2e-100, 1e-100),
    (-7.0, 2e8, 1e-8),
    (9.0, 2e-8, 1e8),
    (-0.4, 2e-100, 1e8),
    (0.3, 2e100, 1e100),
    (0.4, 0.8, 2.0),
]


@pytest.mark.parametrize("mu, sigma, eps", _SCALAR_SETS)
def test_jax_kernel_matches_numba_kernel_length_1_parameters(mu, sigma, eps):
    """One parameter value for all reports (the README model's case): reports 1e3 and 30
    noise scales into both tails, on and next to both bounds, inside and at mu."""
    lo, hi = -1.0, 1.0
    w = hi - lo
    s = w / eps
    z = np.array(
        [lo - 1e3 * s, lo - 30 * s, lo - 1e-9 * w, lo, lo + 1e-6 * w, lo + 0.37 * w, mu]
        + [hi - 1e-6 * w, hi, hi + 1e-9 * w, hi + 30 * s, hi + 1e3 * s]
    )
    one = [np.array([v]) for v in (mu, sigma, lo, hi, eps)]
    f = jax.jit(_jax_kernel(z, *one[2:], grad=True))
    out = f(jnp.asarray(one[0]), jnp.asarray(one[1]))
    full = [np.full(z.shape, v) for v in (mu, sigma, lo, hi, eps)]
    _check_against_numba(z, *full, out)
    # the custom_jvp gradient of the summed log density is the summed closed form
    g_mu, g_sigma = jax.grad(lambda m, sg: f(m, sg)[0].sum(), argnums=(0, 1))(
        jnp.asarray(one[0]), jnp.asarray(one[1])
    )
    # the same 12 per-report terms summed in two orders (XLA's and NumPy's): each order is
    # within 11 u of sum|terms|, and the terms have both signs, so the bound is on that scale
    scale = 24 * np.finfo(float).eps  # (11 + 11) u, u = eps / 2, with a margin of 2
    np.testing.assert_allclose(
        float(g_mu[0]), float(np.sum(out[1])), rtol=1e-14, atol=scale * np.abs(out[1]).sum()
    )
    # the same bound for the sigma terms
    np.testing.assert_allclose(
        float(g_sigma[0]), float(np.sum(out[2])), rtol=1e-14, atol=scale * np.abs(out[2]).sum()
    )


def test_pytensor_jax_mode_takes_the_jax_kernel(monkeypatch):
    """A PyTensor function compiled with mode="JAX" whose reports, bounds and epsilon are
    constants runs the JAX kernel, and agrees with the test run's Python-VM evaluation (the
    Numba kernel) to the tolerances of ``test_backends_agree``."""
    import pymc_dpnoise.math._clipped_normal_jax as J

    calls = []
    real = J.kernel
    monkeypatch.setattr(J, "kernel", lambda *a, **k: calls.append(k) or real(*a, **k))
    case = next(c for c in CASES if c.name == "clipped_normal")
    g = {k: v[::3] for k, v in _normal_grid().items()}
    consts = {k: g[k] for k in ("value", "lower", "upper", "epsilon")}
    args = [g["mu"], g["sigma"]]
    lp_ref, *g_ref = compiled(case, mode=TEST_MODE, constants=consts)(*args)
    lp, *grads = compiled(case, mode="JAX", constants=consts)(*args)
    assert calls, "the JAX kernel was not used"
    # another backend's libm (Numba/LLVM, C, XLA may contract FMAs): few-ulp calls times the
    # condition of a log density, 1e-10 relative is ~1e6 ulp; atol for values near 0
    np.testing.assert_allclose(lp, lp_ref, rtol=1e-10, atol=1e-12)
    for a, b in zip(grads, g_ref, strict=True):
        # abs floor for gradients that are exactly 0 in one backend and a few ulp of the terms in
        # the other
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-12)


def _readme_like_model(grouped):
    rng = np.random.default_rng(0)
    n = 600
    x = rng.normal(1.0, 2.0, size=n)
    z = pmd.mechanisms.perturb_clipped(x, -5.0, 5.0, 1.0, rng)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        if grouped:  # per-report mu, as in a regression
            mu = mu + pm.Normal("effect", 0.0, 1.0, shape=3)[np.arange(n) % 3]
        sigma = pm.Gamma("sigma", 2.0, 1.0)
        pmd.LaplacePerturbedClippedNormal(
            "z", mu=mu, sigma=sigma, lower=-5.0, upper=5.0, epsilon=1.0, observed=z
        )
    return model


@pytest.mark.parametrize("grouped", [False, True], ids=["scalar_mu", "per_report_mu"])
def test_jaxified_logp_gradient_matches_pytensor(grouped, monkeypatch):
    """``jax.value_and_grad`` of PyMC's jaxified model logp (observed data become constants,
    so the JAX kernel and its closed-form JVP are used) against PyTensor's logp and dlogp
    (the Numba kernel), at three points."""
    from pymc.sampling.jax import get_jaxified_logp

    import pymc_dpnoise.math._clipped_normal_jax as J

    calls = []
    real = J.kernel
    monkeypatch.setattr(J, "kernel", lambda *a, **k: calls.append(k) or real(*a, **k))
    model = _readme_like_model(grouped)
    logp_jax = get_jaxified_logp(model)
    assert calls == [{"grad": False}], calls
    f = jax.jit(jax.value_and_grad(lambda p: logp_jax(p)))
    ref = model.compile_fn([model.logp(), model.dlogp()], inputs=model.value_vars, mode=TEST_MODE)
    ip = model.initial_point()
    names = [v.name for v in model.value_vars]
    for shift in (0.0, 0.7, -1.3):
        point = {k: np.asarray(ip[k]) + shift for k in names}
        v, grads = f([jnp.asarray(point[k]) for k in names])
        v_ref, g_ref = ref(point)
        g_jax = np.concatenate([np.ravel(np.asarray(x)) for x in grads])
        assert np.isfinite(float(v)) and np.all(np.isfinite(g_jax))
        # JAX and the reference kernel on one value: few-ulp libm differences at condition ~1,
        # 1e-12 is ~9000 ulp
        np.testing.assert_allclose(float(v), v_ref, rtol=1e-12)
        # gradients: XLA contracts multiply-adds into FMAs, terms that cancel; 1e-9 relative and
        # absolute (module docstring: worst 1.1e-10)
        np.testing.assert_allclose(g_jax, g_ref, rtol=1e-9, atol=1e-9)


def test_kernel_under_vmap_and_grad():
    """Batched (numpyro's vectorised chains) and differentiated: each batch element against
    the Numba kernel, and the gradient of the summed log density is the summed closed form."""
    z = np.linspace(-4.0, 4.0, 9)
    one = [np.array([v]) for v in (-1.0, 2.0, 1.5)]
    f = _jax_kernel(z, *one, grad=False)
    f_grad = _jax_kernel(z, *one, grad=True)
    mus = jnp.array([[-0.5], [0.3], [2.5]])
    batched = jax.vmap(lambda m: f(m, jnp.array([0.9])))(mus)
    for k in range(3):
        mu_k = np.asarray(mus[k])
        ref = _clipped_normal_kernel(z, mu_k, np.array([0.9]), *one)
        full = [np.full(z.shape, v) for v in (mu_k[0], 0.9, -1.0, 2.0, 1.5)]
        own = f_grad(mus[k], jnp.array([0.9]))
        _check_against_numba(z, *full, (batched[k], *own[1:]))
        g = jax.grad(lambda m, s: f(m, s).sum(), argnums=(0, 1))(mus[k], jnp.array([0.9]))
        # the JVP is the closed form summed in a different order: a few ulp of the sum
        np.testing.assert_allclose(float(g[0][0]), ref[1].sum(), rtol=1e-13)
        np.testing.assert_allclose(float(g[1][0]), ref[2].sum(), rtol=1e-13)
