"""Frequency oracles: OUE, SUE, general unary encoding and k-RR, against exact enumeration.

The references sum over the true item of the product of per-bit (or per-report) probabilities,
in log space with NumPy: they share nothing with the one-product closed form under test.
"""

from __future__ import annotations

import itertools

import numpy as np
import pymc as pm
from registry import VectorCase
from scipy.special import logsumexp

import pymc_dpnoise as pmd
from pymc_dpnoise import mechanisms as mech

# --------------------------------------------------------------------------------------------
# Independent references: exact enumeration over the true item
# --------------------------------------------------------------------------------------------


def _log_probs(a, b):
    """log a, log(1-a), log b, log(1-b) from probabilities."""
    return np.log(a), np.log1p(-a), np.log(b), np.log1p(-b)


def ue_reference_logs(z, p, la, l1a, lb, l1b):
    """log sum_x p_x prod_j P(z_j | e_j = [j == x]) for reports z (..., k)."""
    z = np.asarray(z, dtype=float)
    k = z.shape[-1]
    la, l1a, lb, l1b = (np.asarray(v, dtype=float)[..., None, None] for v in (la, l1a, lb, l1b))
    eye = np.eye(k, dtype=bool)  # [x, j]
    zz = z[..., None, :]  # (..., 1, k): broadcast over the true item x
    per_bit = np.where(eye, zz * la + (1 - zz) * l1a, zz * lb + (1 - zz) * l1b)
    with np.errstate(divide="ignore"):
        log_p = np.log(np.asarray(p, dtype=float))
    return logsumexp(log_p + per_bit.sum(-1), axis=-1)


def oue_reference(z, p, epsilon, counts=1.0):
    eps = np.asarray(epsilon, dtype=float)
    # a = 1/2; b = 1/(1+e^eps) in logs computed with NumPy's logaddexp
    la = l1a = np.full(eps.shape, -np.log(2.0))
    lb, l1b = -np.logaddexp(0.0, eps), -np.logaddexp(0.0, -eps)
    return counts * ue_reference_logs(z, p, la, l1a, lb, l1b)


def sue_reference(z, p, epsilon, counts=1.0):
    h = np.asarray(epsilon, dtype=float) / 2
    la, l1a = -np.logaddexp(0.0, -h), -np.logaddexp(0.0, h)
    return counts * ue_reference_logs(z, p, la, l1a, l1a, la)


def ue_reference(z, p, keep_prob, flip_prob, counts=1.0):
    return counts * ue_reference_logs(z, p, *_log_probs(keep_prob, flip_prob))


def krr_reference(y, p, epsilon, counts=1.0):
    y = np.asarray(y)
    p = np.asarray(p, dtype=float)
    eps = np.asarray(epsilon, dtype=float)[..., None]
    k = p.shape[-1]
    log_norm = np.logaddexp(eps, np.log(k - 1))
    same = y[..., None] == np.arange(k)  # [.., x]
    with np.errstate(divide="ignore"):
        terms = np.log(p) + np.where(same, eps - log_norm, -log_norm)
    return counts * logsumexp(terms, axis=-1)


# --------------------------------------------------------------------------------------------
# Grids reaching the extremes: k up to 64, epsilon 0.01 .. 20, p with zeros and near point mass
# --------------------------------------------------------------------------------------------

KS = (2, 3, 8, 9, 64)
EPSILONS = (0.01, 0.5, 2.0, 20.0)


def _thetas(k, rng):
    near_point = np.full(k, 1e-12 / (k - 1))
    near_point[0] = 1 - 1e-12
    with_zeros = rng.dirichlet(np.ones(k))
    with_zeros[: k // 2] = 0.0
    with_zeros /= with_zeros.sum()
    return [np.full(k, 1.0 / k), rng.dirichlet(np.full(k, 0.1)), near_point, with_zeros]


def _bit_reports(k, rng):
    rows = [np.zeros(k), np.ones(k)] + [np.eye(k)[j] for j in (0, k - 1)]
    rows += list(rng.random((5, k)) < 0.3)
    return np.array(rows, dtype=np.int8)


def _unary_grid(scalar_sets):
    def grid():
        rng = np.random.default_rng(42)
        out = []
        for k in KS:
            z = _bit_reports(k, rng)
            for theta, scal in itertools.product(_thetas(k, rng), scalar_sets):
                out.append((z, dict(p=theta, **scal)))
        return out

    return grid


def _krr_grid():
    rng = np.random.default_rng(43)
    out = []
    for k in (2, 3, 64):
        y = np.arange(k)
        for theta, eps in itertools.product(_thetas(k, rng), EPSILONS):
            out.append((y, dict(p=theta, epsilon=eps)))
    return out


def _all_bit_vectors(params):
    k = len(params["p"])
    if k > 10:
        return None  # 2^k reports: enumerate small k only
    return ((np.arange(2**k)[:, None] >> np.arange(k)) & 1).astype(np.int8)


# --------------------------------------------------------------------------------------------
# Models for the gradient and backend checks
# --------------------------------------------------------------------------------------------


def _dirichlet_model(cls, k):
    def model(data, settings):
        with pm.Model() as m:
            theta = pm.Dirichlet("theta", np.ones(k))
            cls("obs", p=theta, **settings, observed=data)
        return m

    return model


def _simulate_unary(perturb, **fixed):
    def simulate(rng, params, n):
        p = np.asarray(params["p"])
        items = rng.choice(len(p), size=n, p=p)
        scal = {k: v for k, v in params.items() if k not in ("p", "counts")}
        return perturb(items, len(p), **scal, rng=rng)

    return simulate


TYPICAL_P = np.array([0.5, 0.3, 0.2])
SHIFTED_P = np.array([0.4, 0.35, 0.25])
GROUP_P = np.array([[[0.6, 0.3, 0.1]], [[0.2, 0.2, 0.6]]])  # (2, 1, 3): two groups


def _bits_batch():
    rng = np.random.default_rng(3)
    z = (rng.random((2, 3, 3)) < 0.4).astype(np.int8)
    return z


def _bad_bit_reports():
    return [
        (np.array([[0, 2, 1]]), "0/1"),
        (np.array([[0, 0.5, 1]]), "0/1"),
        (np.array([[0, 1, 0, 1]]), "k = 3 bits"),
        (np.array(1), "vector of k bits"),
    ]


_COMMON_BAD = [
    (dict(p=np.array([0.5, 0.3, 0.3])), "p"),
    (dict(p=np.array([1.2, -0.1, -0.1])), "p"),
    (dict(p=np.array([0.5, np.nan, 0.5])), "p"),
    (dict(p=np.array([1.0])), "p"),
    (dict(counts=-1.0), "counts"),
]
_EPS_BAD = [
    (dict(epsilon=0.0), "epsilon"),
    (dict(epsilon=-1.0), "epsilon"),
    (dict(epsilon=np.nan), "epsilon"),
    (dict(epsilon=800.0), "epsilon"),
]

CASES = [
    VectorCase(
        name="oue",
        cls=pmd.OUELikelihood,
        core_ndim=dict(p=1, epsilon=0, counts=0),
        event_ndim=1,
        typical=dict(p=TYPICAL_P, epsilon=1.0),
        reference=oue_reference,
        grid=_unary_grid([dict(epsilon=e) for e in EPSILONS]),
        simulate=_simulate_unary(mech.oue_perturb),
        model=_dirichlet_model(pmd.OUELikelihood, 3),
        model_settings=[dict(epsilon=0.01), dict(epsilon=1.0), dict(epsilon=20.0)],
        bad_params=_COMMON_BAD + _EPS_BAD,
        bad_observed=_bad_bit_reports(),
        batch_example=lambda: (
            dict(p=GROUP_P, epsilon=np.array([0.3, 1.0, 5.0]), counts=np.array([[1, 2, 0]] * 2)),
            _bits_batch(),
        ),
        support=_all_bit_vectors,
        shifted=dict(p=SHIFTED_P),
    ),
    VectorCase(
        name="sue",
        cls=pmd.SUELikelihood,
        core_ndim=dict(p=1, epsilon=0, counts=0),
        event_ndim=1,
        typical=dict(p=TYPICAL_P, epsilon=1.0),
        reference=sue_reference,
        grid=_unary_grid([dict(epsilon=e) for e in EPSILONS]),
        simulate=_simulate_unary(mech.sue_perturb),
        model=_dirichlet_model(pmd.SUELikelihood, 3),
        model_settings=[dict(epsilon=0.01), dict(epsilon=20.0)],
        bad_params=_COMMON_BAD + _EPS_BAD,
        bad_observed=_bad_bit_reports(),
        batch_example=lambda: (
            dict(p=GROUP_P, epsilon=np.array([0.3, 1.0, 5.0])),
            _bits_batch(),
        ),
        support=_all_bit_vectors,
        shifted=dict(p=SHIFTED_P),
    ),
    VectorCase(
        name="unary_encoding",
        cls=pmd.UnaryEncodingLikelihood,
        core_ndim=dict(p=1, keep_prob=0, flip_prob=0, counts=0),
        event_ndim=1,
        typical=dict(p=TYPICAL_P, keep_prob=0.8, flip_prob=0.25),
        reference=ue_reference,
        grid=_unary_grid(
            [
                dict(keep_prob=a, flip_prob=b)
                for a, b in [(0.8, 0.25), (0.3, 0.8), (1 - 1e-9, 1e-9), (0.51, 0.5), (0.5, 0.5)]
            ]
        ),
        simulate=_simulate_unary(mech.unary_encoding_perturb),
        model=_dirichlet_model(pmd.UnaryEncodingLikelihood, 3),
        model_settings=[dict(keep_prob=0.8, flip_prob=0.25), dict(keep_prob=0.2, flip_prob=0.9)],
        bad_params=_COMMON_BAD
        + [
            (dict(keep_prob=1.0), "keep_prob"),
            (dict(keep_prob=0.0), "keep_prob"),
            (dict(flip_prob=-0.1), "flip_prob"),
            (dict(flip_prob=np.nan), "flip_prob"),
        ],
        bad_observed=_bad_bit_reports(),
        batch_example=lambda: (
            dict(p=GROUP_P, keep_prob=np.array([0.6, 0.7, 0.9]), flip_prob=0.2),
            _bits_batch(),
        ),
        support=_all_bit_vectors,
        shifted=dict(p=SHIFTED_P),
    ),
    VectorCase(
        name="krr",
        cls=pmd.KRRLikelihood,
        core_ndim=dict(p=1, epsilon=0, counts=0),
        event_ndim=0,
        typical=dict(p=np.array([0.4, 0.3, 0.2, 0.1]), epsilon=1.0),
        reference=krr_reference,
        grid=_krr_grid,
        simulate=lambda rng, params, n: mech.krr_perturb(
            rng.choice(len(params["p"]), size=n, p=params["p"]),
            len(params["p"]),
            params["epsilon"],
            rng,
        ),
        model=_dirichlet_model(pmd.KRRLikelihood, 4),
        model_settings=[dict(epsilon=0.01), dict(epsilon=1.0), dict(epsilon=20.0)],
        bad_params=[(dict(p=np.array([0.5, 0.3, 0.3, 0.1])), "p")] + _EPS_BAD,
        bad_observed=[
            (np.array([0, 4, 1]), r"items in \[0, k\)"),
            (np.array([0, -1]), r"items in \[0, k\)"),
            (np.array([0.5, 1.0]), r"items in \[0, k\)"),
        ],
        batch_example=lambda: (
            dict(
                p=np.array([[[0.4, 0.3, 0.2, 0.1]], [[0.1, 0.1, 0.1, 0.7]]]),
                epsilon=[0.3, 1.0, 5.0],
            ),
            np.array([[0, 1, 3], [3, 3, 2]]),
        ),
        support=lambda params: np.arange(len(params["p"])),
        shifted=dict(p=np.array([0.35, 0.3, 0.2, 0.15])),
    ),
]
