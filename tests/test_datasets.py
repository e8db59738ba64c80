"""Loaders for the data sets shipped with the package (no downloads)."""

import numpy as np
import pytest

from pymc_dpnoise import datasets


def test_adult():
    train = datasets.load_adult("train")
    test = datasets.load_adult("test")
    assert len(train) == 32_561 and len(test) == 16_281
    assert len(datasets.load_adult("both")) == 32_561 + 16_281
    for df in (train, test):
        assert set(np.unique(df["income_gt_50k"])) == {0, 1}
    assert 0.2 < train["income_gt_50k"].mean() < 0.3


def test_wine():
    assert len(datasets.load_wine("red")) == 1599
    assert len(datasets.load_wine("white")) == 4898
    both = datasets.load_wine("both")
    assert len(both) == 1599 + 4898
    assert "colour" in both.columns
    assert both.select_dtypes("number").shape[1] >= 12


def test_pima():
    df = datasets.load_pima()
    assert df.shape[0] == 768
    assert set(np.unique(df.iloc[:, -1])) == {0, 1}


def test_kosarak():
    users = datasets.load_kosarak()
    assert len(users) == 36_682
    assert all(isinstance(i, int) for i in users[0])
    assert len(datasets.load_kosarak(max_users=10)) == 10
    counts = datasets.kosarak_item_counts(max_users=1000)
    assert counts.iloc[0] >= counts.iloc[-1]


def test_citation_and_bad_names():
    assert "CC BY 4.0" in datasets.citation("adult")
    with pytest.raises(ValueError):
        datasets.citation("nonexistent")
    with pytest.raises(ValueError):
        datasets.load_wine("rose")
