"""Cost of one log density + gradient against N, for every public distribution.

For every distribution in ``pymc_dpnoise.__all__`` a small model is built the way a user builds
it (``pm.Model``, priors on the learned parameters, the release observed as a constant), and
the function ``(value variables) -> (model logp, d logp / d each value variable)`` is compiled
with PyTensor's default mode (the Numba linker), the function PyMC's and nutpie's NUTS call
once per leapfrog step.  N is

* for the **per-report** models (clipped Gaussian / exponential reports, the frequency oracles
  KRR / OUE / SUE / unary encoding, perturbed linear and logistic regression): the number of
  reports observed, N = 1e3, 1e4, ... up to 1e7 (1e6 for ``PerturbedLogReg``; see "Where the
  per-report runs stop" in the results for why, with the measured memory and time);
* for the **count / sufficient-statistic** models (noisy binomial / Poisson counts, noisy
  truncated sums, noisy multinomial counts, ``SSNormalApprox``): the number of records behind
  the one release (``n=N`` or a Poisson mean proportional to N), N = 1e3 ... 1e8.  The
  observed release is the statistic drawn from its central-limit law (the sum of N records'
  statistics: N times their mean plus sqrt(N) times a normal with their covariance, estimated
  from 10^5 simulated records) plus the mechanism's noise; the records themselves are not
  simulated at 1e8 (the cost of the model does not depend on them);
* for the **summary** models (``LaplacePerturbedClipped*Summary`` from ``pmd.summarize``,
  ``PerturbedLinRegSummary``, ``PerturbedLogRegSummary`` from ``summarize_logreg``): the number
  of reports summarised, simulated with the package's mechanisms and summarised before the
  timing (summary construction is not timed).  The clipped summaries are timed twice: with the
  default tolerance (``tol=0.01`` nats, whose bin count grows like N^(1/3)) and with a fixed
  256 bins.

All N of one model are timed in the same interleaved rounds (``_common.time_variants``: the
order rotates every round, each timing is a batch of about 30 ms), so the ratio
cost(N) / cost(1e3) comes from one run; the ratio reported is the median over rounds of the
per-round ratio (wall time).  Peak resident memory of building, compiling and timing one model
(all its N at once) is read from ``VmHWM`` after resetting it (``/proc/self/clear_refs``).

``BayesNet`` is in ``__all__`` but is a network structure (parents and cardinalities), not a
distribution: there is no log density to time.  ``LaplaceNoisyTruncatedNormalGivenSum``,
``LaplaceNoisyMultinomialGivenCounts`` and ``LaplaceNoisyMultinomialGivenNoiseVar`` are the
building blocks that the ``LaplaceNoisyTruncatedNormal`` and ``LaplaceNoisyMultinomial``
factories add to the model (with their latent), so they are timed through the factories (both
latents of the multinomial).

Run: ``.venv/bin/python benchmarks/grad_cost_vs_n.py`` (``--quick``: N up to 1e4, 3 rounds,
for debugging only; ``--only NAME`` to run models whose name contains NAME).
"""

from __future__ import annotations

import argparse
import gc
import resource
import time
import warnings
from pathlib import Path

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from _common import Timer, machine_info, md_table, time_variants, write_results
from scipy import special

import pymc_dpnoise as pmd
from pymc_dpnoise import mechanisms as mech
from pymc_dpnoise import noise as nz
from pymc_dpnoise.summaries import summarize_regression

NAME = "grad_cost_vs_n"
FLAT = 2.0
MEM_BUDGET_GB = 4.0


# --------------------------------------------------------------------------------------------
# memory
# --------------------------------------------------------------------------------------------


def reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_gb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def rss_gb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 2**20
    return float("nan")


# --------------------------------------------------------------------------------------------
# releases of N records (count / sufficient-statistic models)
# --------------------------------------------------------------------------------------------


def clt_sum(rng, per_record: np.ndarray, n: int) -> np.ndarray:
    """A draw of the sum of ``n`` records' statistics from its normal approximation, the mean
    and covariance estimated from ``per_record`` (m, k) simulated records."""
    m = per_record.mean(0)
    c = np.atleast_2d(np.cov(per_record, rowvar=False))
    chol = np.linalg.cholesky(c + 1e-12 * np.eye(len(m)))
    return n * m + np.sqrt(n) * chol @ rng.normal(size=len(m))


def laplace(rng, scale, size=None):
    return rng.laplace(0.0, scale, size)


# --------------------------------------------------------------------------------------------
# model builders: builder(N, rng) -> pm.Model
# --------------------------------------------------------------------------------------------


def m_clipped_normal(n, rng):
    z = mech.perturb_clipped(rng.normal(1.0, 2.0, n), -5.0, 5.0, 1.0, rng)
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.Gamma("sigma", 2.0, 1.0)
        pmd.LaplacePerturbedClippedNormal(
            "z", mu=mu, sigma=sigma, lower=-5.0, upper=5.0, epsilon=1.0, observed=z
        )
    return m


def m_clipped_exponential(n, rng):
    z = mech.perturb_clipped_exponential(rng.exponential(1 / 0.7, n), 5.0, 1.0, rng)
    with pm.Model() as m:
        lam = pm.Gamma("lam", 2.0, 2.0)
        pmd.LaplacePerturbedClippedExponential("z", lam=lam, upper=5.0, epsilon=1.0, observed=z)
    return m


P3 = np.array([0.5, 0.3, 0.2])
P4 = np.array([0.4, 0.3, 0.2, 0.1])


def _freq_model(cls, reports, counts=None, **kw):
    k = kw.pop("k")
    with pm.Model() as m:
        theta = pm.Dirichlet("theta", np.ones(k))
        extra = {} if counts is None else {"counts": counts}
        cls("obs", p=theta, **kw, **extra, observed=reports)
    return m


def m_krr(n, rng):
    items = rng.choice(4, size=n, p=P4)
    return _freq_model(pmd.KRRLikelihood, mech.krr_perturb(items, 4, 1.0, rng), k=4, epsilon=1.0)


def _unary_reports(n, rng, perturb, **kw):
    items = rng.choice(3, size=n, p=P3)
    return perturb(items, 3, **kw, rng=rng)


def m_oue(n, rng):
    z = _unary_reports(n, rng, mech.oue_perturb, epsilon=1.0)
    return _freq_model(pmd.OUELikelihood, z, k=3, epsilon=1.0)


def m_sue(n, rng):
    z = _unary_reports(n, rng, mech.sue_perturb, epsilon=1.0)
    return _freq_model(pmd.SUELikelihood, z, k=3, epsilon=1.0)


def m_unary(n, rng):
    z = _unary_reports(n, rng, mech.unary_encoding_perturb, keep_prob=0.8, flip_prob=0.25)
    return _freq_model(pmd.UnaryEncodingLikelihood, z, k=3, keep_prob=0.8, flip_prob=0.25)


def _aggregated(n, rng, make_chunk, chunk=10_000_000):
    """Distinct reports and their counts, built chunk by chunk (so N = 1e8 fits)."""
    tally: dict = {}
    done = 0
    while done < n:
        size = min(chunk, n - done)
        z = make_chunk(size)
        z2 = z.reshape(size, -1)
        u, c = np.unique(z2, axis=0, return_counts=True)
        for row, cnt in zip(map(tuple, u), c, strict=True):
            tally[row] = tally.get(row, 0) + int(cnt)
        done += size
    keys = sorted(tally)
    vals = np.array(keys)
    if vals.shape[1] == 1 and z.ndim == 1:
        vals = vals[:, 0]
    return vals, np.array([tally[k] for k in keys], dtype=float)


def m_krr_counts(n, rng):
    vals, cnt = _aggregated(
        n, rng, lambda s: mech.krr_perturb(rng.choice(4, size=s, p=P4), 4, 1.0, rng)
    )
    return _freq_model(pmd.KRRLikelihood, vals, counts=cnt, k=4, epsilon=1.0)


def m_oue_counts(n, rng):
    vals, cnt = _aggregated(n, rng, lambda s: _unary_reports(s, rng, mech.oue_perturb, epsilon=1.0))
    return _freq_model(pmd.OUELikelihood, vals, counts=cnt, k=3, epsilon=1.0)


LIN = dict(theta=np.array([1.0, -0.5]), sigma=0.3, cov=np.array([[1.0, 0.3], [0.3, 0.5]]))
LOG = dict(theta=np.array([1.5, -1.0]), cov=np.array([[1.0, 0.3], [0.3, 0.5]]))
SX, SY, EPS_Y = 0.5, 0.5, 1.0


def linreg_reports(n, rng):
    x = rng.multivariate_normal(np.zeros(2), LIN["cov"], size=n)
    y = x @ LIN["theta"] + rng.normal(0.0, LIN["sigma"], n)
    return np.column_stack([x + rng.normal(0.0, SX, (n, 2)), y + rng.normal(0.0, SY, n)])


def logreg_reports(n, rng):
    x = rng.multivariate_normal(np.zeros(2), LOG["cov"], size=n)
    y = (rng.random(n) < special.expit(x @ LOG["theta"])).astype(int)
    zy = mech.randomized_response(y, EPS_Y, rng)
    return np.column_stack([x + rng.normal(0.0, SX, (n, 2)), zy.astype(float)])


def _linreg_priors():
    theta = pm.Normal("theta", 0.0, 5.0, shape=2)
    sigma = pm.HalfNormal("sigma", 1.0)
    chol, _, _ = pm.LKJCholeskyCov(
        "chol", n=2, eta=2.0, sd_dist=pm.HalfNormal.dist(2.5), compute_corr=True
    )
    return theta, sigma, chol @ chol.T


def m_linreg(n, rng):
    z = linreg_reports(n, rng)
    with pm.Model() as m:
        theta, sigma, cov = _linreg_priors()
        pmd.PerturbedLinReg(
            "obs", theta=theta, sigma=sigma, cov=cov, sigma_x=SX, sigma_y=SY, observed=z
        )
    return m


def m_linreg_summary(n, rng):
    s = summarize_regression(linreg_reports(n, rng))
    with pm.Model() as m:
        theta, sigma, cov = _linreg_priors()
        pmd.PerturbedLinRegSummary(
            "obs", theta=theta, sigma=sigma, cov=cov, sigma_x=SX, sigma_y=SY, observed=s
        )
    return m


def m_logreg(n, rng):
    z = logreg_reports(n, rng)
    with pm.Model() as m:
        theta = pm.Normal("theta", 0.0, 5.0, shape=2)
        tau = pm.HalfNormal("tau", 2.5, shape=2)
        pmd.PerturbedLogReg(
            "obs", theta=theta, cov=pm.math.diag(tau**2), sigma_x=SX, epsilon_y=EPS_Y, observed=z
        )
    return m


def m_logreg_summary(n, rng):
    s = pmd.summarize_logreg(logreg_reports(n, rng), SX, EPS_Y)
    with pm.Model() as m:
        theta = pm.Normal("theta", 0.0, 5.0, shape=2, initval=s.theta_pilot)
        tau = pm.HalfNormal("tau", 2.5, shape=2)
        pmd.PerturbedLogRegSummary(
            "obs", theta=theta, cov=pm.math.diag(tau**2), sigma_x=SX, epsilon_y=EPS_Y, observed=s
        )
    return m


def _clipped_summary(n, rng, family, n_bins):
    chunk = 10_000_000
    if family == "normal":
        parts = [
            mech.perturb_clipped(rng.normal(1.0, 2.0, min(chunk, n - i)), -5.0, 5.0, 1.0, rng)
            for i in range(0, n, chunk)
        ]
        z = np.concatenate(parts)
        del parts
        return pmd.summarize(z, -5.0, 5.0, 1.0, n_bins=n_bins)
    parts = [
        mech.perturb_clipped_exponential(rng.exponential(1 / 0.7, min(chunk, n - i)), 5.0, 1.0, rng)
        for i in range(0, n, chunk)
    ]
    z = np.concatenate(parts)
    del parts
    return pmd.summarize(z, 0.0, 5.0, 1.0, n_bins=n_bins, model="exponential")


def _m_cn_summary(n_bins):
    def build(n, rng):
        s = _clipped_summary(n, rng, "normal", n_bins)
        with pm.Model() as m:
            mu = pm.Normal("mu", 0.0, 5.0)
            sigma = pm.Gamma("sigma", 2.0, 1.0)
            pmd.LaplacePerturbedClippedNormalSummary("z", mu=mu, sigma=sigma, observed=s)
        m.n_bins_used = s.table.shape[0] - 2
        return m

    return build


def _m_ce_summary(n_bins):
    def build(n, rng):
        s = _clipped_summary(n, rng, "exponential", n_bins)
        with pm.Model() as m:
            lam = pm.Gamma("lam", 2.0, 2.0)
            pmd.LaplacePerturbedClippedExponentialSummary("z", lam, observed=s)
        m.n_bins_used = s.table.shape[0] - 2
        return m

    return build


# ---- counts ----------------------------------------------------------------------------------


def m_noisy_binomial(n, rng):
    z = rng.binomial(n, 0.3) + laplace(rng, 1.0)
    with pm.Model() as m:
        p = pm.Beta("p", 1.0, 1.0)
        pmd.LaplaceNoisyBinomial("y", n=n, p=p, epsilon=1.0, observed=np.array([z]))
    return m


def m_clamped_binomial(n, rng):
    z = np.clip(rng.binomial(n, 0.3) + laplace(rng, 1.0 / 0.7), 0, n)
    with pm.Model() as m:
        p = pm.Beta("p", 1.0, 1.0)
        pmd.LaplaceNoisyBinomial("y", n=n, p=p, epsilon=0.7, clamp=True, observed=np.array([z]))
    return m


def m_noisy_poisson(n, rng):
    z = rng.poisson(0.02 * n) + laplace(rng, 1.0)
    with pm.Model() as m:
        rate = pm.Gamma("rate", 2.0, 50.0)
        pmd.LaplaceNoisyPoisson(
            "y", mu=rate * n, epsilon=1.0, sensitivity=1.0, observed=np.array([z])
        )
    return m


def m_noisy_binomial_dgauss(n, rng):
    spec = nz.DiscreteGaussian(10.0)
    z = rng.binomial(n, 0.3) + int(np.round(rng.normal(0, 10.0)))
    with pm.Model() as m:
        p = pm.Beta("p", 1.0, 1.0)
        pmd.NoisyBinomial("y", n=n, p=p, noise=spec, observed=np.array([z]))
    return m


def m_noisy_poisson_rlaplace(n, rng):
    spec = nz.RoundedLaplace.from_epsilon(1.0)
    z = rng.poisson(0.02 * n) + int(np.round(laplace(rng, 1.0)))
    with pm.Model() as m:
        rate = pm.Gamma("rate", 2.0, 50.0)
        pmd.NoisyPoisson("y", mu=rate * n, noise=spec, observed=np.array([z]))
    return m


def _trunc_stat(x, lo, hi, powers=(1,)):
    keep = (x >= lo) & (x <= hi)
    return np.column_stack([np.where(keep, x**k, 0.0) for k in powers])


def m_trunc_exponential(n, rng, gaussian=False):
    s = clt_sum(rng, _trunc_stat(rng.exponential(2.0, 100_000), 0.0, 8.0), n)
    with pm.Model() as m:
        lam = pm.Gamma("lam", 2.0, 4.0)
        if gaussian:
            y = s + rng.normal(0.0, 8.0, 1)
            pmd.GaussianNoisyTruncatedExponential(
                "y", n=n, lam=lam, lower=0.0, upper=8.0, noise_sigma=8.0, observed=y
            )
        else:
            y = s + laplace(rng, 8.0, 1)
            pmd.LaplaceNoisyTruncatedExponential(
                "y", n=n, lam=lam, lower=0.0, upper=8.0, epsilon=1.0, observed=y
            )
    return m


def m_trunc_poisson(n, rng, gaussian=False):
    s = clt_sum(rng, _trunc_stat(rng.poisson(3.0, 100_000).astype(float), 0.0, 10.0), n)
    with pm.Model() as m:
        mu = pm.Gamma("mu", 3.0, 1.0)
        if gaussian:
            y = s + rng.normal(0.0, 10.0, 1)
            pmd.GaussianNoisyTruncatedPoisson(
                "y", n=n, mu=mu, lower=0.0, upper=10.0, noise_sigma=10.0, observed=y
            )
        else:
            y = s + laplace(rng, 10.0, 1)
            pmd.LaplaceNoisyTruncatedPoisson(
                "y", n=n, mu=mu, lower=0.0, upper=10.0, epsilon=1.0, observed=y
            )
    return m


def m_trunc_normal(n, rng, gaussian=False):
    s = clt_sum(rng, _trunc_stat(rng.normal(0.5, 1.5, 100_000), -3.0, 4.0, (1, 2)), n)
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 5.0)
        sigma = pm.HalfNormal("sigma", 5.0)
        if gaussian:
            y = s + rng.normal(0.0, 20.0, 2)
            pmd.GaussianNoisyTruncatedNormal(
                "y", n=n, mu=mu, sigma=sigma, lower=-3.0, upper=4.0, noise_sigma=20.0, observed=y
            )
        else:
            sens = mech.truncated_normal_sum_sensitivity(-3.0, 4.0)
            y = s + laplace(rng, sens, 2)
            pmd.LaplaceNoisyTruncatedNormal(
                "y", n=n, mu=mu, sigma=sigma, lower=-3.0, upper=4.0, epsilon=1.0, observed=y
            )
    return m


def m_multinomial(n, rng, latent=None, gaussian=False):
    s = rng.multinomial(n, P3).astype(float)
    with pm.Model() as m:
        p = pm.Dirichlet("p", np.ones(3))
        if gaussian:
            pmd.GaussianNoisyMultinomial(
                "y", n=n, p=p, noise_sigma=5.0, observed=s + rng.normal(0.0, 5.0, 3)
            )
        else:
            pmd.LaplaceNoisyMultinomial(
                "y", n=n, p=p, epsilon=1.0, latent=latent, observed=s + laplace(rng, 2.0, 3)
            )
    return m


SS_COV = 0.09 * np.eye(2)


def m_ss_normal_approx(n, rng):
    x = rng.multivariate_normal(np.zeros(2), SS_COV, size=100_000)
    y = np.where(rng.random(len(x)) < special.expit(x @ np.array([1.0, -0.5])), 1.0, -1.0)
    t = mech.sufficient_statistics(x, y, "logistic")
    sig = mech.analytic_gaussian_sigma(1.0, 1e-5, np.sqrt(4.5))
    k = t.shape[1]
    z = clt_sum(rng, t, n) + rng.normal(0.0, sig, k)
    with pm.Model() as m:
        theta = pm.Normal("theta", 0.0, 2.0, shape=2)
        pmd.SSNormalApprox("z", theta, SS_COV, float(n), sig**2 * np.eye(k), "logistic", observed=z)
    return m


E3, E8 = [10**k for k in range(3, 8)], [10**k for k in range(3, 9)]

# (label, distribution(s) it times, kind, builder, N list)
MODELS = [
    ("LaplacePerturbedClippedNormal", "per report", m_clipped_normal, E3),
    ("LaplacePerturbedClippedExponential", "per report", m_clipped_exponential, E3),
    ("KRRLikelihood", "per report", m_krr, E3),
    ("KRRLikelihood (counts=)", "aggregated reports", m_krr_counts, E8),
    ("OUELikelihood", "per report", m_oue, E3),
    ("OUELikelihood (counts=)", "aggregated reports", m_oue_counts, E8),
    ("SUELikelihood", "per report", m_sue, E3),
    ("UnaryEncodingLikelihood", "per report", m_unary, E3),
    ("PerturbedLinReg", "per report", m_linreg, E3),
    ("PerturbedLogReg", "per report", m_logreg, E3[:-1]),
    ("LaplacePerturbedClippedNormalSummary (tol=0.01)", "summary", _m_cn_summary(None), E8),
    ("LaplacePerturbedClippedNormalSummary (256 bins)", "summary", _m_cn_summary(256), E8),
    ("LaplacePerturbedClippedExponentialSummary (tol=0.01)", "summary", _m_ce_summary(None), E8),
    ("LaplacePerturbedClippedExponentialSummary (256 bins)", "summary", _m_ce_summary(256), E8),
    ("PerturbedLinRegSummary", "summary", m_linreg_summary, E3),
    ("PerturbedLogRegSummary", "summary", m_logreg_summary, E3),
    ("LaplaceNoisyBinomial", "count", m_noisy_binomial, E8),
    ("ClampedLaplaceNoisyBinomial", "count", m_clamped_binomial, E8),
    ("LaplaceNoisyPoisson", "count", m_noisy_poisson, E8),
    ("NoisyBinomial (discrete Gaussian, sigma=10)", "count", m_noisy_binomial_dgauss, E8),
    ("NoisyPoisson (rounded Laplace)", "count", m_noisy_poisson_rlaplace, E8),
    ("LaplaceNoisyTruncatedExponential", "sufficient statistic", m_trunc_exponential, E8),
    (
        "GaussianNoisyTruncatedExponential",
        "sufficient statistic",
        lambda n, r: m_trunc_exponential(n, r, True),
        E8,
    ),
    ("LaplaceNoisyTruncatedPoisson", "sufficient statistic", m_trunc_poisson, E8),
    (
        "GaussianNoisyTruncatedPoisson",
        "sufficient statistic",
        lambda n, r: m_trunc_poisson(n, r, True),
        E8,
    ),
    ("LaplaceNoisyTruncatedNormal (GivenSum + latent)", "sufficient statistic", m_trunc_normal, E8),
    (
        "GaussianNoisyTruncatedNormal",
        "sufficient statistic",
        lambda n, r: m_trunc_normal(n, r, True),
        E8,
    ),
    (
        "LaplaceNoisyMultinomial (GivenNoiseVar, latent=noise_variance)",
        "count",
        lambda n, r: m_multinomial(n, r, "noise_variance"),
        E8,
    ),
    (
        "LaplaceNoisyMultinomial (GivenCounts, latent=counts)",
        "count",
        lambda n, r: m_multinomial(n, r, "counts"),
        E8,
    ),
    (
        "GaussianNoisyMultinomial",
        "count",
        lambda n, r: m_multinomial(n, r, gaussian=True),
        E8,
    ),
    ("SSNormalApprox (logistic)", "sufficient statistic", m_ss_normal_approx, E8),
]

STOP_REASON = {
    "per report": "1e8 not run: see 'Where the per-report runs stop'",
    "PerturbedLogReg": "1e7 not run: one logp + gradient takes ~30 s there (issue 24), "
    "so 5 calibration calls + 2 calls per round would take > 8 min for this one variant",
    "PerturbedLinRegSummary": "1e8 not run: the summary is built from an in-memory (N, 3) "
    "float64 array (2.4 GB at 1e8, more with the simulator's temporaries)",
    "PerturbedLogRegSummary": "1e8 not run: the summary is built from an in-memory (N, 3) "
    "float64 array (2.4 GB at 1e8, more with the simulator's temporaries and passes)",
}


def compile_grad(model):
    vars_ = model.value_vars
    lp = model.logp()
    outs = [lp, *pt.grad(lp, vars_)]
    f = pytensor.function(vars_, outs, on_unused_input="ignore")  # default mode: Numba
    f.trust_input = True
    ip = model.initial_point()
    args = [np.asarray(ip[v.name], dtype=v.dtype) for v in vars_]
    out = f(*args)
    if not all(np.all(np.isfinite(o)) for o in out):
        raise RuntimeError(f"non-finite logp/gradient at the initial point: {out}")
    return (lambda: f(*args)), float(out[0])


def run_model(label, kind, builder, ns, rounds, seed):
    gc.collect()
    reset_ok = reset_peak()
    base = rss_gb()
    fns, meta = {}, {}
    for n in ns:
        rng = np.random.default_rng(seed + n % 9973)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Timer() as tb:
                model = builder(n, rng)
            with Timer() as tc:
                fn, lp0 = compile_grad(model)
        fns[n] = fn
        meta[n] = {
            "build_s": tb.wall,
            "compile_s": tc.wall,
            "logp_at_initial_point": lp0,
            "n_bins": getattr(model, "n_bins_used", None),
        }
        del model
    wall, cpu, reps = time_variants(fns, rounds=rounds)
    peak = peak_gb()
    n0 = ns[0]
    per_n = {}
    for n in ns:
        ratios = np.asarray(wall[n]) / np.asarray(wall[n0])
        per_n[n] = {
            **meta[n],
            "wall_s": float(np.median(wall[n])),
            "cpu_s": float(np.median(cpu[n])),
            "min_wall_s": float(np.min(wall[n])),
            "ratio_vs_first": float(np.median(ratios)),
            "ratio_min_vs_first": float(np.min(wall[n]) / np.min(wall[n0])),
            "batch_reps": reps[n],
            "wall_all": wall[n],
        }
    nmax = ns[-1]
    row = {
        "model": label,
        "kind": kind,
        "ns": ns,
        "per_n": per_n,
        "n_max": nmax,
        "ratio_max": per_n[nmax]["ratio_vs_first"],
        "ratio_1e7": per_n[10**7]["ratio_vs_first"] if 10**7 in per_n else None,
        "peak_rss_gb": peak if reset_ok else None,
        "rss_before_gb": base,
    }
    row["flat"] = row["ratio_max"] <= FLAT
    return row


def fmt_t(s):
    if s is None:
        return "–"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    return f"{s:.3g} s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="N up to 1e4, 3 rounds (debug only)")
    ap.add_argument("--only", default=None, help="run models whose label contains this")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--kinds",
        default=None,
        help="comma-separated kinds to run (e.g. 'count,sufficient statistic'); the results "
        "go to grad_cost_vs_n.<kinds>.json, to be joined with --merge",
    )
    ap.add_argument(
        "--merge",
        nargs="+",
        default=None,
        help="result files (json) of earlier runs to join into grad_cost_vs_n.{md,json}",
    )
    args = ap.parse_args()
    global NAME
    if args.merge:
        return merge(args.merge)
    kinds = None
    if args.kinds:
        kinds = {k.strip() for k in args.kinds.split(",")}
        NAME = f"{NAME}.{'+'.join(sorted(k.replace(' ', '_') for k in kinds))}"
    t_start = time.perf_counter()
    info = machine_info()
    rounds = 3 if args.quick else args.rounds
    rows, errors = [], []
    for i, (label, kind, builder, ns) in enumerate(MODELS):
        if args.only and args.only not in label:
            continue
        if kinds and kind not in kinds:
            continue
        if args.quick:
            ns = [n for n in ns if n <= 10**4]
        try:
            with Timer() as t:
                row = run_model(label, kind, builder, ns, rounds, seed=1000 * i)
        except Exception as exc:  # recorded in the results, the run goes on
            errors.append({"model": label, "error": f"{type(exc).__name__}: {exc}"[:500]})
            print(f"{label}: FAILED {errors[-1]['error']}", flush=True)
            continue
        row["script_s"] = t.wall
        rows.append(row)
        write_md(rows, errors, rounds, info, t_start)
        print(
            f"{label:60s} "
            + " ".join(f"{n:.0e}:{fmt_t(row['per_n'][n]['wall_s'])}" for n in ns)
            + f" | ratio {row['ratio_max']:.2f} | peak {row['peak_rss_gb']:.2f} GB | {t.wall:.0f} s",
            flush=True,
        )
    write_md(rows, errors, rounds, info, t_start)


def merge(paths):
    """Join the rows of several runs (each model timed in one run) into one result."""
    import json

    t_start = time.perf_counter()
    rows, errors, seen, runs = [], [], set(), []
    for p in paths:
        d = json.loads(Path(p).read_text())
        runs.append({"file": str(p), "machine": d["machine"]})
        for r in d["rows"]:
            if r["model"] in seen:
                continue
            seen.add(r["model"])
            r["ns"] = [int(n) for n in r["ns"]]
            r["per_n"] = {int(k): v for k, v in r["per_n"].items()}
            r["run"] = str(p)
            rows.append(r)
        errors += [e for e in d.get("errors", []) if e["model"] not in seen]
    order = {m[0]: i for i, m in enumerate(MODELS)}
    rows.sort(key=lambda r: order.get(r["model"], 999))
    info = dict(runs[0]["machine"])  # a copy: runs holds the original (no cycle)
    info["merged_from"] = runs
    write_md(rows, errors, d["rounds"], info, t_start, runs=runs)


def write_md(rows, errors, rounds, info, t_start, runs=None):
    all_n = E8
    table = []
    for r in rows:
        d = {"model": r["model"], "kind": r["kind"]}
        for n in all_n:
            d[f"t{n}"] = fmt_t(r["per_n"][n]["wall_s"]) if n in r["per_n"] else "–"
        d["ratio"] = f"{r['ratio_max']:.2f} (1e{int(np.log10(r['n_max']))})"
        d["flat"] = "flat" if r["flat"] else "grows"
        d["peak"] = r["peak_rss_gb"]
        table.append(d)
    cols = (
        [("model", "model"), ("kind", "N counts")]
        + [(f"t{n}", f"N=1e{int(np.log10(n))}") for n in all_n]
        + [
            ("ratio", "cost(N_max)/cost(1e3) (N_max)"),
            ("flat", "≤ 2?"),
            ("peak", "peak RSS GB"),
        ]
    )
    bins = [
        f"- {r['model']}: "
        + ", ".join(f"1e{int(np.log10(n))}: {r['per_n'][n]['n_bins']}" for n in r["ns"])
        for r in rows
        if r["per_n"][r["ns"][0]]["n_bins"] is not None
    ]
    per_report = [r for r in rows if r["kind"] == "per report"]
    stop_lines = []
    for r in per_report:
        n_last = r["n_max"]
        t_last = r["per_n"][n_last]["wall_s"]
        if r["model"] in STOP_REASON:
            stop_lines.append(
                f"- {r['model']}: stopped at 1e{int(np.log10(n_last))}; "
                + STOP_REASON[r["model"]]
                + "."
            )
            continue
        stop_lines.append(
            f"- {r['model']}: stopped at 1e{int(np.log10(n_last))}; peak RSS of building, "
            f"compiling and timing all N of this model {r['peak_rss_gb']:.2f} GB (process "
            f"before: {r['rss_before_gb']:.2f} GB); 10x the reports would need about "
            f"{10 * (r['peak_rss_gb'] - r['rss_before_gb']):.1f} GB above that "
            f"(budget {MEM_BUDGET_GB:.0f} GB) and about {10 * t_last:.1f} s per call "
            f"(x ~15 calls for calibration and rounds)."
        )
    for name in ("PerturbedLinRegSummary", "PerturbedLogRegSummary"):
        if any(r["model"] == name for r in rows):
            stop_lines.append(f"- {name}: {STOP_REASON[name]}.")
    md = [
        "# Cost of one logp + gradient against N, every distribution",
        "",
        "Model log density (priors included, as a sampler evaluates it) and its gradient with "
        "respect to every value variable, compiled with PyTensor's default mode (Numba), "
        "evaluated at the model's initial point; wall time per call, median over "
        f"{rounds} interleaved rounds (all N of one model timed in the same rounds). "
        "N is the number of reports (per report), of records behind the one release (count, "
        "sufficient statistic) or of reports summarised (summary); see the script's "
        "docstring for each model. The ratio is the median over rounds of the per-round "
        f"ratio cost(N_max)/cost(1e3); 'flat' where it is ≤ {FLAT:g}.",
        "",
        md_table(table, cols),
        "## Where the per-report runs stop",
        "",
        *stop_lines,
        "",
        "## Bins of the clipped summaries",
        "",
        *(bins or ["- (none run)"]),
        "",
        "## Not timed",
        "",
        "- `BayesNet`: a network structure (parents, cardinalities), not a distribution.",
        "- `LaplaceNoisyTruncatedNormalGivenSum`, `LaplaceNoisyMultinomialGivenCounts`, "
        "`LaplaceNoisyMultinomialGivenNoiseVar`: timed through the factories that add them "
        "with their latent (`LaplaceNoisyTruncatedNormal`, `LaplaceNoisyMultinomial`).",
        *[f"- {e['model']}: failed: `{e['error']}`" for e in errors],
        "",
    ]
    if runs:
        md += [
            "## Runs joined",
            "",
            "Each model was timed within one run (all its N interleaved); the models were "
            "split over concurrent runs of the script (`--kinds`) and joined with `--merge`:",
            "",
            *[
                f"- `{r['file']}`: `{r['machine']['command']}`, started "
                f"{r['machine']['started']}, load {r['machine']['loadavg_at_start']}"
                for r in runs
            ],
            "",
        ]
    data = {"rows": rows, "errors": errors, "rounds": rounds}
    write_results(NAME, info, "\n".join(md), data, t_start)


if __name__ == "__main__":
    main()
