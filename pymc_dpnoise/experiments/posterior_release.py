"""Posterior-release mechanisms (Zhang, Rubinstein & Dimitrakakis, AAAI 2016): Figs. 1 and 2,
calibration of the two readings of an Algorithm 1 release, empirical privacy checks.

Behind ``notebooks/posterior_release.ipynb``.

* :func:`run_fig1` — the paper's Fig. 1: naive Bayes, 16 binary features, 1000 synthetic
  records of which 50 train, uniform Beta priors, test accuracy against ε for the non-private
  posterior, Algorithm 1 read by plug-in (the paper) and noise-aware
  (:class:`~pymc_dpnoise.posterior_release.reader.ExactPosterior`), Algorithm 2 at 90%
  non-negativity and posterior sampling.
* :func:`run_fig2` — the paper's Fig. 2: linear regression, test MSE against the prior
  precision, on Wine (both colours).  The paper's U.S. census extract (IPUMS, 370k records) is
  not available; Wine is the real regression data set shipped with the package.
* :func:`run_sbc_exact` — SBC of the noise-aware and plug-in readings of an Algorithm 1
  release with exact posterior quantiles (no MCMC error);
  :func:`run_sbc_nuts` — SBC of the PyMC model
  (:func:`~pymc_dpnoise.posterior_release.reader.noise_aware_model`) fitted with NUTS.
* :func:`run_privacy` — empirical privacy check of every mechanism on two neighbouring data
  sets (:func:`pymc_dpnoise.privacy_check.empirical_privacy_loss`).

Command line (results cached as CSV in ``results/posterior_release``; ``PMD_MODE`` or
``--mode`` picks the settings)::

    python -m pymc_dpnoise.experiments.posterior_release --mode full
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..diagnostics import SBCProblem
from .toolkit import cached, experiment_parser, run_sbc, sbc_coverage, seeded_rng, write_table

__all__ = [
    "METHODS",
    "SETTINGS",
    "NaiveBayesReleaseSBC",
    "accuracy_summary",
    "main",
    "paired_difference",
    "privacy_cases",
    "run_fig1",
    "run_fig2",
    "run_privacy",
    "run_sbc_exact",
    "run_sbc_nuts",
    "sbc_summary",
]

#: Fig. 1 lines, in plotting order
METHODS = (
    "non-private",
    "Alg. 1 noise-aware",
    "Alg. 1 plug-in",
    "Alg. 2 (90%)",
    "Alg. 2 noise-aware",
    "posterior sampling",
)

SETTINGS = {
    "full": {
        "fig1": dict(
            n_features=16,
            n_records=1000,
            n_train=50,
            repeats=100,
            epsilons=(0.1, 0.3, 1.0, 3.0, 10.0, 30.0),
        ),
        "fig2": dict(precisions=(1.0, 10.0, 100.0, 1e3, 1e4), repeats=30, train_frac=0.1),
        "sbc": dict(
            designs=((2, 8), (2, 20), (16, 50)),
            epsilons=(0.1, 1.0),
            replicates=1000,
            fourier=((2, 20),),  # Algorithm 2 releases too (reader O(F n^3))
        ),
        "sbc_nuts": dict(
            n_features=2, n=20, epsilons=(0.1, 1.0), replicates=400, draws=500, tune=500
        ),
        "privacy": dict(draws=20_000, min_count=100),
    },
    "fast": {
        "fig1": dict(
            n_features=16, n_records=1000, n_train=50, repeats=10, epsilons=(0.1, 1.0, 10.0)
        ),
        "fig2": dict(precisions=(1.0, 100.0, 1e4), repeats=3, train_frac=0.1),
        "sbc": dict(designs=((2, 20),), epsilons=(0.1, 1.0), replicates=100, fourier=((2, 20),)),
        "sbc_nuts": None,  # NUTS SBC is full mode only (the model's first compile takes ~1 min)
        "privacy": dict(draws=2_000, min_count=40, skip=("alg1_chain",)),  # 1/64 bin
    },
}

OUT = "results/posterior_release"


def _mode(mode):
    mode = mode or os.environ.get("PMD_MODE", "fast")
    if mode not in SETTINGS:
        raise ValueError(f"`mode` must be one of {sorted(SETTINGS)}; got {mode!r}")
    return mode


def _feature_truth(net, theta):
    """(pi, theta[f, c]) of a naive Bayes parameter set with the class in column 0."""
    return float(theta[0][0, 1]), np.stack([theta[f][:, 1] for f in range(1, net.n_nodes)])


# --------------------------------------------------------------------------------------------
# Fig. 1: naive Bayes accuracy against epsilon
# --------------------------------------------------------------------------------------------


def _nb_accuracy(pi, theta, x_test, y_test):
    from ..posterior_release import predict_proba

    return float(np.mean((predict_proba(pi, theta, x_test) > 0.5) == y_test))


def _beta_means(tables, prior=1.0):
    """(pi, theta[f, c]) posterior means from per-node (J, 2) count tables (clipped at 0)."""
    t = {i: np.maximum(np.asarray(v, dtype=float), 0.0) + prior for i, v in tables.items()}
    pi = t[0][0, 1] / t[0][0].sum()
    th = np.stack([t[f][:, 1] / t[f].sum(axis=1) for f in range(1, len(t))])
    return pi, th


def _fig1_repeat(cfg, seed, r):
    from .. import posterior_release as m
    from ..posterior_release import BayesNet, ExactPosterior, plugin_posterior

    net = BayesNet.naive_bayes(cfg["n_features"])
    rng = seeded_rng(seed, r)
    theta = net.sample_parameters(1.0, rng)
    x = net.sample_data(theta, cfg["n_records"], rng)
    perm = rng.permutation(cfg["n_records"])
    train, test = x[perm[: cfg["n_train"]]], x[perm[cfg["n_train"] :]]
    xt, yt = test[:, 1:], test[:, 0]
    rows = []
    acc = _nb_accuracy(*_beta_means(net.counts(train)), xt, yt)
    rows.append(dict(repeat=r, epsilon=np.inf, method="non-private", accuracy=acc))
    for e, eps in enumerate(cfg["epsilons"]):
        g = seeded_rng(seed, r, e + 1)
        rel = m.laplace_posterior_updates(train, net, eps, g)
        post = plugin_posterior(rel)
        pi = post["class"][0] / post["class"].sum()
        th = post["theta"][..., 0] / post["theta"].sum(axis=-1)
        out = {
            "Alg. 1 plug-in": _nb_accuracy(pi, th, xt, yt),
            "Alg. 1 noise-aware": float(
                np.mean((ExactPosterior(rel).predict_proba(xt) > 0.5) == yt)
            ),
        }
        rel2 = m.fourier_posterior_updates(train, net, eps, g, t=math.log(10.0))
        out["Alg. 2 (90%)"] = _nb_accuracy(*_beta_means(rel2.values), xt, yt)
        out["Alg. 2 noise-aware"] = float(
            np.mean((ExactPosterior(rel2).predict_proba(xt) > 0.5) == yt)
        )
        rel3 = m.posterior_sample(train, net, eps, g)
        out["posterior sampling"] = _nb_accuracy(*_feature_truth(net, rel3.values), xt, yt)
        for method, acc in out.items():
            rows.append(dict(repeat=r, epsilon=eps, method=method, accuracy=acc))
        rows[-3]["nonnegative"] = rel2.metadata["nonnegative"]
    return rows


def run_fig1(mode=None, out=OUT, seed=2026, recompute=False) -> pd.DataFrame:
    """Fig. 1 per repeat: ``repeat, epsilon, method, accuracy`` (``nonnegative`` for Alg. 2).

    The non-private posterior does not depend on ε (``epsilon = inf``).  Every repeat draws
    the true parameters from the uniform prior, 1000 records, a random 50/950 split; every
    (repeat, ε) its own mechanism noise.  Posterior sampling releases one draw at ε (the
    paper averages several draws, each a separate release: not done here).
    """
    mode = _mode(mode)
    cfg = SETTINGS[mode]["fig1"]

    def compute():
        rows = []
        for r in range(cfg["repeats"]):
            rows += _fig1_repeat(cfg, seed, r)
        return pd.DataFrame(rows)

    return cached(Path(out) / f"fig1_{mode}.csv", compute, recompute=recompute)


def accuracy_summary(tab: pd.DataFrame) -> pd.DataFrame:
    """Mean accuracy and its standard error over repeats, per (method, ε)."""
    g = tab.groupby(["method", "epsilon"])["accuracy"]
    s = g.agg(mean="mean", sd="std", repeats="count").reset_index()
    s["se"] = s["sd"] / np.sqrt(s["repeats"])
    return s.drop(columns="sd")


def paired_difference(tab: pd.DataFrame, a="Alg. 1 noise-aware", b="Alg. 1 plug-in"):
    """Accuracy of ``a`` minus ``b`` per ε, paired over repeats: mean, standard error."""
    tab = tab[np.isfinite(tab["epsilon"])]
    w = tab.pivot_table(index=["epsilon", "repeat"], columns="method", values="accuracy")
    d = (w[a] - w[b]).groupby("epsilon")
    s = d.agg(difference="mean", sd="std", repeats="count").reset_index()
    s["se"] = s["sd"] / np.sqrt(s["repeats"])
    return s.drop(columns="sd")


# --------------------------------------------------------------------------------------------
# Fig. 2: linear regression MSE against the prior precision
# --------------------------------------------------------------------------------------------


def run_fig2(mode=None, out=OUT, seed=2026, recompute=False) -> pd.DataFrame:
    """Fig. 2 on Wine: ``repeat, precision, radius, epsilon, method, mse``.

    Features: the 11 physico-chemical measurements standardised on the training part and
    scaled to norm <= 1 (:func:`pymc_dpnoise.datasets.scale_features`); target: quality minus
    its training mean, divided by 3 and clipped to [-1, 1].  10% of the records train (as the
    paper's census experiment); σ = 1 (the paper's Appendix D).  For prior precision ``b`` the
    weights are restricted to norm ``10 / sqrt(b)`` (the paper's choice); the ε this gives is
    :func:`pymc_dpnoise.posterior_release.sampling.linreg_sampling_epsilon`.  Methods: the
    non-private posterior mean (ridge with penalty ``b``) and one posterior sample (the
    mechanism).  MSE in quality units squared.
    """
    from .. import posterior_release as m
    from ..datasets import scale_features, wine_features

    mode = _mode(mode)
    cfg = SETTINGS[mode]["fig2"]

    def compute():
        F, quality, _ = wine_features()
        rows = []
        for r in range(cfg["repeats"]):
            rng = seeded_rng(seed, 2, r)
            perm = rng.permutation(len(quality))
            k = round(cfg["train_frac"] * len(quality))
            tr, te = perm[:k], perm[k:]
            Xtr, Xte = scale_features(F[tr]), scale_features(F[te], ref=F[tr])
            mu = quality[tr].mean()
            ytr = np.clip((quality[tr] - mu) / 3.0, -1.0, 1.0)
            yte = quality[te]
            for b in cfg["precisions"]:
                model = m.LinRegModel(sigma=1.0, precision=b)
                radius = 10.0 / math.sqrt(b)
                eps = m.linreg_sampling_epsilon(model, radius)
                d = Xtr.shape[1]
                w_map = np.linalg.solve(Xtr.T @ Xtr + b * np.eye(d), Xtr.T @ ytr)
                rel = m.posterior_sample_linreg((Xtr, ytr), model, eps, rng, radius=radius)
                for method, w in (("non-private", w_map), ("posterior sampling", rel.values)):
                    mse = float(np.mean((yte - (mu + 3.0 * Xte @ w)) ** 2))
                    rows.append(
                        dict(
                            repeat=r,
                            precision=b,
                            radius=radius,
                            epsilon=eps,
                            method=method,
                            mse=mse,
                        )
                    )
        return pd.DataFrame(rows)

    return cached(Path(out) / f"fig2_{mode}.csv", compute, recompute=recompute)


# --------------------------------------------------------------------------------------------
# SBC of the two readings of an Algorithm 1 release
# --------------------------------------------------------------------------------------------


def _param_names(n_features):
    return ("theta_class",) + tuple(f"theta[{f},{c}]" for f in range(n_features) for c in range(2))


@dataclasses.dataclass(frozen=True)
class NaiveBayesReleaseSBC(SBCProblem):
    """An Algorithm 1 release of naive Bayes data (``n`` records, ``n_features`` features).

    Truth from the uniform prior; ``simulate`` returns the release as the flat reports vector
    (:func:`pymc_dpnoise.posterior_release.reader.release_reports`).  Noise-aware model:
    :func:`~pymc_dpnoise.posterior_release.reader.noise_aware_model` (exact sum); naive model: the
    paper's plug-in reading, Beta priors updated with the released counts as if exact.
    """

    n_features: int = 2
    epsilon: float = 1.0
    prior: float = 1.0

    @property
    def param_names(self):
        return _param_names(self.n_features)

    @property
    def scale(self):
        return 2.0 * (self.n_features + 1) / self.epsilon

    def simulate(self, rng):
        from .. import posterior_release as m
        from ..posterior_release import BayesNet, release_reports

        net = BayesNet.naive_bayes(self.n_features)
        theta = net.sample_parameters(self.prior, rng)
        x = net.sample_data(theta, self.n, rng)
        rel = m.laplace_posterior_updates(x, net, self.epsilon, rng)
        pi, th = _feature_truth(net, theta)
        return {"theta_class": pi, "theta": th}, release_reports(rel)

    def build_model(self, reports, noise_aware=True):
        import pymc as pm

        from ..posterior_release import NaiveBayesRelease, noise_aware_model

        rd = NaiveBayesRelease(reports, self.n, self.scale)
        if noise_aware:
            return noise_aware_model(rd, self.prior, method="exact")
        coords = {"feature": list(rd.features), "class": [0, 1]}
        with pm.Model(coords=coords) as model:
            z = pm.Data("reports", rd.reports)
            a = np.float64(self.prior)  # not a float32 constant
            pi = pm.Beta("theta_class", a, a)
            th = pm.Beta("theta", a, a, dims=("feature", "class"))
            tab = z[2:].reshape((-1, 2, 2))
            pm.Potential(
                "plugin",
                z[1] * pm.math.log(pi)
                + z[0] * pm.math.log1p(-pi)
                + (tab[:, :, 1] * pm.math.log(th) + tab[:, :, 0] * pm.math.log1p(-th)).sum(),
            )
        return model

    def extract(self, posterior, truth):
        pi = np.asarray(posterior["theta_class"].values, dtype=float)
        th = np.asarray(posterior["theta"].values, dtype=float)
        out = [(pi, truth["theta_class"])]
        for f in range(self.n_features):
            for c in range(2):
                out.append((th[..., f, c], float(truth["theta"][f, c])))
        return out


def _exact_quantiles(problem: NaiveBayesReleaseSBC, replicates, seed):
    """Posterior quantiles of the truth, exact: noise-aware (mixture of Betas) and plug-in."""
    from scipy.special import betainc

    from ..posterior_release import ExactPosterior, NaiveBayesRelease, plugin_posterior

    aware, plug = [], []
    seeds = np.random.SeedSequence(seed).spawn(replicates)
    for ss in seeds:
        truth, reports = problem.simulate(np.random.default_rng(ss))
        rd = NaiveBayesRelease(reports, problem.n, problem.scale)
        qc, qt = ExactPosterior(rd, problem.prior).cdf(truth["theta_class"], truth["theta"])
        aware.append([qc, *qt.ravel()])
        p = plugin_posterior(rd, problem.prior)
        plug.append(
            [
                betainc(*p["class"], truth["theta_class"]),
                *betainc(p["theta"][..., 0], p["theta"][..., 1], truth["theta"]).ravel(),
            ]
        )
    return np.array(aware), np.array(plug)


def _exact_quantiles_fourier(problem: NaiveBayesReleaseSBC, replicates, seed):
    """As :func:`_exact_quantiles` for a one-run Algorithm 2 release (t = ln 10); plug-in:
    Beta(a + h_1, b + h_0) with the released table cells clipped at 0."""
    from scipy.special import betainc

    from .. import posterior_release as m
    from ..posterior_release import BayesNet, ExactPosterior

    net = BayesNet.naive_bayes(problem.n_features)
    a = problem.prior
    aware, plug = [], []
    for ss in np.random.SeedSequence(seed).spawn(replicates):
        rng = np.random.default_rng(ss)
        theta = net.sample_parameters(a, rng)
        x = net.sample_data(theta, problem.n, rng)
        rel = m.fourier_posterior_updates(x, net, problem.epsilon, rng, t=math.log(10.0))
        pi, th = _feature_truth(net, theta)
        qc, qt = ExactPosterior(rel, a).cdf(pi, th)
        aware.append([qc, *qt.ravel()])
        h = {i: np.maximum(v, 0.0) + a for i, v in rel.values.items()}
        hf = np.stack([h[f] for f in range(1, net.n_nodes)])  # (F, 2 classes, 2 values)
        plug.append(
            [betainc(h[0][0, 1], h[0][0, 0], pi), *betainc(hf[..., 1], hf[..., 0], th).ravel()]
        )
    return np.array(aware), np.array(plug)


def run_sbc_exact(mode=None, out=OUT, seed=2026, recompute=False) -> pd.DataFrame:
    """SBC with exact posterior quantiles: coverage table (one row per design, ε, model,
    parameter, level; 99% binomial bands), from :func:`~.toolkit.sbc_coverage`."""
    mode = _mode(mode)
    cfg = SETTINGS[mode]["sbc"]

    def compute():
        tabs = []
        for f, n in cfg["designs"]:
            for eps in cfg["epsilons"]:
                prob = NaiveBayesReleaseSBC(n=n, n_features=f, epsilon=eps)
                t0 = time.time()
                qa, qp = _exact_quantiles(prob, cfg["replicates"], seed)
                qs = [("noise-aware", qa), ("plug-in", qp)]
                if (f, n) in cfg.get("fourier", ()):
                    qa2, qp2 = _exact_quantiles_fourier(prob, cfg["replicates"], seed)
                    qs += [("Alg. 2 noise-aware", qa2), ("Alg. 2 plug-in", qp2)]
                secs = time.time() - t0
                for model, q in qs:
                    # exact quantiles: no chains, no R-hat, no divergences
                    tab = sbc_coverage(
                        q, prob.param_names, [1.0], [0], ks=True, epsilon=eps, model=model
                    )
                    tab["max_rhat"] = np.nan
                    tab["n_features"], tab["n_records"], tab["seconds"] = f, n, secs
                    tabs.append(tab)
        return pd.concat(tabs, ignore_index=True)

    return cached(Path(out) / f"sbc_exact_{mode}.csv", compute, recompute=recompute)


def run_sbc_nuts(mode=None, out=OUT, seed=2026, recompute=False, n_jobs=1) -> pd.DataFrame:
    """SBC of the PyMC model fitted with NUTS (nutpie), noise-aware only (the plug-in
    posterior is an exact Beta: :func:`run_sbc_exact` covers it).  Full mode only; in fast
    mode the committed full-mode table is read if present (else an empty table)."""
    mode = _mode(mode)
    cfg = SETTINGS[mode]["sbc_nuts"]
    if cfg is None:
        path = Path(out) / "sbc_nuts_full.csv"
        return pd.read_csv(path) if path.exists() else pd.DataFrame()

    def compute():
        tabs = []
        for eps in cfg["epsilons"]:
            prob = NaiveBayesReleaseSBC(n=cfg["n"], n_features=cfg["n_features"], epsilon=eps)
            res, secs = run_sbc(prob, cfg["replicates"], cfg, seed=seed, n_jobs=n_jobs)
            tab = sbc_coverage(
                res.quantiles,
                res.param_names,
                res.max_rhat,
                res.divergences,
                ks=True,
                epsilon=eps,
                model="noise-aware (NUTS)",
            )
            tab["n_features"], tab["n_records"] = cfg["n_features"], cfg["n"]
            tab["seconds"] = secs
            tabs.append(tab)
        return pd.concat(tabs, ignore_index=True)

    return cached(Path(out) / f"sbc_nuts_{mode}.csv", compute, recompute=recompute)


def sbc_summary(tab: pd.DataFrame, level: float = 0.9) -> pd.DataFrame:
    """Per (design, ε, model): coverage of the ``level`` interval over the parameters (mean,
    min, max), how many parameters fall outside their 99% band, and the smallest KS p-value."""
    t = tab[np.isclose(tab["level"], level)]
    g = t.groupby(["n_features", "n_records", "epsilon", "model"])
    s = g.agg(
        replicates=("n", "max"),
        coverage_mean=("coverage", "mean"),
        coverage_min=("coverage", "min"),
        coverage_max=("coverage", "max"),
        band_lo=("band_lo", "min"),
        band_hi=("band_hi", "max"),
        outside=("inside", lambda v: int((~v.astype(bool)).sum())),
        params=("inside", "size"),
        ks_p_min=("ks_p", "min"),
    )
    return s.reset_index()


# --------------------------------------------------------------------------------------------
# Empirical privacy checks
# --------------------------------------------------------------------------------------------


def _atom_bin(rel):
    """Alg. 1 output with n = 1: each released count in {0}, (0, 1), {1}."""
    return tuple(
        int(np.sign(v - 0.5) + 1) if v in (0.0, 1.0) else 1
        for i in sorted(rel.values)
        for v in rel.values[i].ravel()
    )


def _changed_atoms(rel):
    """Alg. 1, one record flipped from all-0 to all-1 (n = 1): only the cells that move, as
    -1 (atom at 0), 0 (interior), +1 (atom at 1)."""
    cells = [(0, 0, 0), (0, 0, 1)]
    net = rel.metadata["structure"]
    for i in range(1, net.n_nodes):
        cells += [(i, 0, 0), (i, net.n_configs[i] - 1, 1)]
    out = []
    for i, j, v in cells:
        z = rel.values[i][j, v]
        out.append(-1 if z == 0.0 else (1 if z == 1.0 else 0))
    return tuple(out)


def _coef_bin(rel, thresholds=(-6.0, 6.0)):
    c = rel.metadata["coefficients"][1:]  # the empty set's never moves
    return tuple(np.digitize(c, thresholds).tolist())


def privacy_cases(epsilon: float = 1.0):
    """``(name, mechanism, D, D', statistic, claimed ε)`` for every mechanism.

    Neighbours and bins are chosen to come close to the bound: for Algorithm 1 one record that
    flips every node with ``n = 1`` (the clamp atoms make the bound tight); for the others a
    few records, one changed, and bins of the released value.
    """
    from .. import posterior_release as m

    eps = float(epsilon)
    lin = m.LinRegModel(sigma=1.0)
    X1 = np.array([[1.0]])
    cands = [{0: np.array([[p, 1 - p]])} for p in (0.15, 0.35, 0.5, 0.65, 0.85)]
    wtrim = 1 / (1 + math.exp(eps / 2))
    edges = np.linspace(wtrim, 1 - wtrim, 9)[1:-1]
    chain = {0: (), 1: (0,), 2: (1,)}
    return [
        (
            "alg1",
            lambda d, g: m.laplace_posterior_updates(d, {0: ()}, eps, g),
            np.array([[0]]),
            np.array([[1]]),
            _atom_bin,
            eps,
        ),
        (
            "alg1_chain",
            lambda d, g: m.laplace_posterior_updates(d, chain, eps, g),
            np.array([[0, 0, 0]]),
            np.array([[1, 1, 1]]),
            _changed_atoms,
            eps,
        ),
        (
            "alg2",
            lambda d, g: m.fourier_posterior_updates(d, {0: ()}, eps, g, t=1.0),
            np.array([[0]] * 3),
            np.array([[0]] * 2 + [[1]]),
            _coef_bin,
            eps,
        ),
        (
            "alg2_until_nonnegative",
            lambda d, g: m.fourier_posterior_updates(d, {0: ()}, eps, g, t=0.05, max_tries=None),
            np.array([[0]] * 3),
            np.array([[0]] * 2 + [[1]]),
            _coef_bin,
            2 * eps,
        ),
        (
            "posterior_sample",
            lambda d, g: m.posterior_sample(d, {0: ()}, eps, g),
            np.array([[1]] * 4),
            np.array([[1]] * 3 + [[0]]),
            lambda r: int(np.digitize(r.values[0][0, 1], edges)),
            eps,
        ),
        (
            "posterior_sample_linreg",
            lambda d, g: m.posterior_sample_linreg(d, lin, eps, g),
            (np.vstack([X1, X1]), np.array([1.0, 1.0])),
            (np.vstack([X1, X1]), np.array([1.0, -1.0])),
            lambda r: int(np.digitize(r.values[0], np.linspace(-0.25, 0.25, 7))),
            eps,
        ),
        (
            "exponential_map",
            lambda d, g: m.exponential_map(d, {0: ()}, eps, g, candidates=cands),
            np.array([[1]] * 3),
            np.array([[1]] * 2 + [[0]]),
            lambda r: r.metadata["index"],
            eps,
        ),
    ]


def run_privacy(mode=None, out=OUT, seed=2026, recompute=False) -> pd.DataFrame:
    """One row per mechanism: claimed ε, largest log-ratio ± s.e., lower bound, verdict."""
    from ..privacy_check import empirical_privacy_loss

    mode = _mode(mode)
    cfg = SETTINGS[mode]["privacy"]
    draws, min_count = cfg["draws"], cfg["min_count"]

    def compute():
        rows = []
        for c, (name, mech, d1, d2, stat, eps) in enumerate(privacy_cases()):
            if name in cfg.get("skip", ()):
                continue
            res = empirical_privacy_loss(
                mech, d1, d2, stat, draws, seeded_rng(seed, 3, c), min_count=min_count
            )
            rows.append(
                dict(
                    mechanism=name,
                    claimed_epsilon=eps,
                    max_log_ratio=res.max_log_ratio,
                    std_error=res.std_error,
                    lower_bound=res.lower_bound,
                    consistent=res.consistent_with(eps),
                    n_bins=res.n_bins,
                    draws=draws,
                )
            )
        return pd.DataFrame(rows)

    return cached(Path(out) / f"privacy_{mode}.csv", compute, recompute=recompute)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def main(argv=None):
    ap = experiment_parser(
        "Posterior-release experiments (Zhang et al. 2016 Figs. 1, 2; SBC; privacy)",
        SETTINGS,
        OUT,
    )
    ap.set_defaults(mode=os.environ.get("PMD_MODE", "fast"))
    ap.add_argument("--recompute", action="store_true")
    ap.add_argument("--only", nargs="*", default=["fig1", "fig2", "sbc", "sbc_nuts", "privacy"])
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    kw = dict(mode=args.mode, out=out, recompute=args.recompute)
    t0 = time.time()
    if "fig1" in args.only:
        tab = run_fig1(**kw)
        write_table(accuracy_summary(tab), out, f"fig1_summary_{args.mode}")
        write_table(paired_difference(tab), out, f"fig1_aware_minus_plugin_{args.mode}")
        print(f"fig1 done ({time.time() - t0:.0f} s)")
    if "fig2" in args.only:
        tab = run_fig2(**kw)
        s = tab.groupby(["precision", "method"]).agg(
            radius=("radius", "first"),
            epsilon=("epsilon", "first"),
            mse=("mse", "mean"),
            se=("mse", lambda v: v.std() / np.sqrt(len(v))),
        )
        write_table(s.reset_index(), out, f"fig2_summary_{args.mode}")
        print(f"fig2 done ({time.time() - t0:.0f} s)")
    if "sbc" in args.only:
        write_table(sbc_summary(run_sbc_exact(**kw)), out, f"sbc_exact_summary_{args.mode}")
        print(f"sbc done ({time.time() - t0:.0f} s)")
    if "sbc_nuts" in args.only and SETTINGS[args.mode]["sbc_nuts"] is not None:
        tab = run_sbc_nuts(**kw, n_jobs=args.jobs or 1)
        write_table(sbc_summary(tab), out, f"sbc_nuts_summary_{args.mode}")
        print(f"sbc_nuts done ({time.time() - t0:.0f} s)")
    if "privacy" in args.only:
        write_table(run_privacy(**kw), out, f"privacy_{args.mode}")
        print(f"privacy done ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
