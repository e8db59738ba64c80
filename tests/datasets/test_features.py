"""Feature matrices, splits and scaling of the shipped data sets (``pymc_dpnoise.datasets.features``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_dpnoise import datasets as ds


def test_wine_split_preprocessing():
    s = ds.wine_split(np.random.default_rng(3), d=3)
    assert s.X_train.shape == (5198, 3) and s.X_test.shape == (1299, 3)
    norms = np.linalg.norm(s.X_train, axis=1)
    assert norms.max() <= 1 + 1e-12
    # rescaled by the 95% quantile of the norms: ~5% of the training rows sit on the sphere
    assert np.mean(norms > 1 - 1e-9) == pytest.approx(0.05, abs=0.002)
    assert abs(s.y_train.mean()) < 1e-12  # centred with the training mean
    # quality scores are integers: test targets = integer - training mean
    shift = s.y_test - np.round(s.y_test)
    assert np.allclose(shift, shift[0])
    s2 = ds.wine_split(np.random.default_rng(3), d=3)
    np.testing.assert_array_equal(s.X_test, s2.X_test)
    # PCA scores are uncorrelated on the training data (before clipping; nearly after)
    c = np.corrcoef(s.X_train.T)
    assert np.max(np.abs(c[np.triu_indices(3, 1)])) < 0.1


def test_wine_group_split_centres_within_groups():
    s = ds.wine_group_split(np.random.default_rng(4), d=3)
    assert np.bincount(s.groups_train).tolist() == [1279, 3918]
    assert np.bincount(s.groups_test).tolist() == [320, 980]
    assert np.linalg.norm(s.X_train, axis=1).max() <= 1 + 1e-12
    for g in (0, 1):
        a = s.groups_train == g
        # the mean of centred labels: n terms of size 1 summed in any order, n u ~ 1e-13 for n <
        # 1000 rows
        assert abs(s.y_train[a].mean()) < 1e-12
        # centred before clipping, so only approximately zero-mean after it
        assert np.all(np.abs(s.X_train[a].mean(0)) < 0.02)


def test_adult_split_shapes_and_labels():
    s = ds.adult_split(np.random.default_rng(5), d=3, n_train=1000)
    assert s.X_train.shape == (1000, 3) and s.X_test.shape == (16281, 3)
    assert set(np.unique(s.y_train)) == {0, 1}
    assert 0.15 < s.y_test.mean() < 0.3  # about 24% earn more than 50K
    assert np.linalg.norm(s.X_test, axis=1).max() <= 1 + 1e-12


def test_scale_features_standardises_divides_and_clips():
    rng = np.random.default_rng(0)
    X = rng.normal(5.0, 3.0, size=(2000, 4)) * np.array([1.0, 10.0, 0.1, 2.0])
    Z = ds.scale_features(X)
    norms = np.linalg.norm(Z, axis=1)
    assert Z.shape == X.shape
    assert norms.max() <= 1.0 + 1e-12
    # rows inside the unit ball are the standardised rows divided by 2 sqrt(d) = 4
    W = (X - X.mean(0)) / X.std(0) / 4.0
    inside = np.linalg.norm(W, axis=1) <= 1.0
    assert inside.mean() > 0.95
    # only + - * / and sqrt (correctly rounded everywhere) in possibly different orders: a few
    # ulp; atol for entries centred near 0 (ulp of |X| <= 1e3 over 4 std ~ 1e-15)
    np.testing.assert_allclose(Z[inside], W[inside], rtol=1e-12, atol=1e-14)
    # clipped rows keep their direction and get norm exactly 1
    out = ~inside
    if out.any():
        np.testing.assert_allclose(norms[out], 1.0, rtol=1e-12)
        np.testing.assert_allclose(
            # a norm (sqrt of a sum of d squares) and one division: d u relative, far below 1e-12
            Z[out],
            W[out] / np.linalg.norm(W[out], axis=1, keepdims=True),
            rtol=1e-12,
        )
    # a constant column does not produce NaNs
    Xc = np.column_stack([X[:, 0], np.full(len(X), 3.0)])
    assert np.all(np.isfinite(ds.scale_features(Xc)))


def test_scale_features_uses_the_reference_moments():
    rng = np.random.default_rng(1)
    ref = rng.normal(2.0, 4.0, size=(500, 3))
    X = rng.normal(2.0, 4.0, size=(50, 3))
    Z = ds.scale_features(X, ref=ref, R=10.0)  # R large: no clipping
    expect = (X - ref.mean(0)) / ref.std(0) / (2 * math.sqrt(3))
    np.testing.assert_allclose(Z, expect, rtol=1e-12)


def test_pima_loaders():
    X, y = ds.pima_data()
    assert X.shape == (768, len(ds.PIMA_FEATURES))
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert np.linalg.norm(X, axis=1).max() <= 1.0 + 1e-12
    np.testing.assert_allclose(X.mean(0), 0.0, atol=0.02)
    Xp, yp = ds.pima_poisson_data(Ry=10.0)
    assert Xp.shape == (768, len(ds.POISSON_FEATURES))
    assert yp.min() >= 0 and yp.max() == 10.0
    assert np.all(yp == np.round(yp))


def test_adult_loader_subset_split_and_columns():
    X, y = ds.adult_data(np.random.default_rng(0), n=500, d=4)
    assert X.shape == (500, 4) and y.shape == (500,)
    assert set(np.unique(y)) == {-1.0, 1.0}
    Xtr, ytr, Xte, yte = ds.adult_data(np.random.default_rng(0), n=1000, test_fraction=0.25)
    assert Xtr.shape == (750, len(ds.ADULT_FEATURES)) and Xte.shape == (250, 7)
    assert ytr.shape == (750,) and yte.shape == (250,)
    assert np.linalg.norm(Xte, axis=1).max() <= 1.0 + 1e-12
    # the same seed gives the same records
    X2, y2 = ds.adult_data(np.random.default_rng(0), n=500, d=4)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    # the binary indicators take two values per column
    F, _ = ds.adult_indicator_features()
    for c in ("self_employed", "married", "exec_or_prof", "own_child", "male"):
        assert set(np.unique(F[c])) == {0.0, 1.0}


def test_wine_loader():
    Xtr, ytr, Xte, yte, y_mean = ds.wine_data(np.random.default_rng(0), d=3, Ry=2.0)
    n = len(ytr) + len(yte)
    assert n == 6497 and len(ytr) == round(0.8 * n)
    assert Xtr.shape == (len(ytr), 3) and Xte.shape == (len(yte), 3)
    assert np.abs(ytr).max() <= 2.0
    assert 5.0 < y_mean < 6.5
    assert set(np.unique(yte)) <= set(range(3, 10))
    # principal components of the training part are uncorrelated
    C = np.corrcoef(Xtr, rowvar=False)
    assert np.abs(C[np.triu_indices(3, 1)]).max() < 0.1
