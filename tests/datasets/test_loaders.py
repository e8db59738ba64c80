"""Loaders for the data sets shipped with the package (no downloads)."""

import numpy as np
import pandas as pd
import pytest

from pymc_dpnoise import datasets

ADULT_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "income_gt_50k",
]

WINE_COLUMNS = [
    "fixed_acidity",
    "volatile_acidity",
    "citric_acid",
    "residual_sugar",
    "chlorides",
    "free_sulfur_dioxide",
    "total_sulfur_dioxide",
    "density",
    "ph",
    "sulphates",
    "alcohol",
    "quality",
]


def test_adult_shapes_columns_labels():
    train = datasets.load_adult("train")
    test = datasets.load_adult("test")
    assert train.shape == (32_561, 15) and test.shape == (16_281, 15)
    assert list(train.columns) == ADULT_COLUMNS == list(test.columns)
    for df in (train, test):
        assert df["income_gt_50k"].dtype == np.int64
        assert set(np.unique(df["income_gt_50k"])) == {0, 1}
        for col in ("age", "fnlwgt", "education_num", "hours_per_week"):
            assert pd.api.types.is_integer_dtype(df[col]), col
        assert pd.api.types.is_string_dtype(df["workclass"])
        # "?" is missing, values are stripped of the leading space
        assert not df["workclass"].dropna().str.startswith(" ").any()
        assert "?" not in set(df["workclass"].dropna())
    assert train["workclass"].isna().sum() == 1836
    # label rates from adult.names: 23.93% (train) / 23.62% (test) have income > 50K
    assert train["income_gt_50k"].sum() == 7841
    assert test["income_gt_50k"].sum() == 3846  # test labels end with "."; must still be parsed


def test_adult_both_and_bad_split():
    both = datasets.load_adult("both")
    assert len(both) == 32_561 + 16_281
    assert both["split"].value_counts().to_dict() == {"train": 32_561, "test": 16_281}
    with pytest.raises(ValueError, match="split"):
        datasets.load_adult("validation")


def test_wine():
    red = datasets.load_wine("red")
    white = datasets.load_wine("white")
    assert red.shape == (1599, 12) and white.shape == (4898, 12)
    assert list(red.columns) == WINE_COLUMNS
    assert (red.dtypes.iloc[:11] == np.float64).all()
    assert red["quality"].dtype == np.int64
    assert red["quality"].between(0, 10).all()
    both = datasets.load_wine("both")
    assert len(both) == 1599 + 4898
    assert list(both.columns) == [*WINE_COLUMNS, "colour"]
    assert both["colour"].value_counts().to_dict() == {"white": 4898, "red": 1599}
    assert both.select_dtypes("number").shape[1] == 12
    with pytest.raises(ValueError, match="colour"):
        datasets.load_wine("rose")


def test_pima():
    df = datasets.load_pima()
    assert df.shape == (768, 9)
    assert list(df.columns) == list(datasets.PIMA_COLUMNS)
    assert df["outcome"].dtype == np.int64
    assert df["outcome"].value_counts().to_dict() == {0: 500, 1: 268}
    assert df["bmi"].dtype == np.float64 and df["diabetes_pedigree"].dtype == np.float64
    assert df["age"].min() >= 21


def test_kosarak():
    users = datasets.load_kosarak()
    assert len(users) == 36_682
    assert all(isinstance(i, int) for t in users[:100] for i in t)
    assert all(len(t) > 0 for t in users)
    assert users[:3] == [[1, 2, 3], [1], [4, 5, 6, 7]]
    assert len(datasets.load_kosarak(max_users=10)) == 10
    assert datasets.load_kosarak(max_users=0) == []
    # callers may mutate the returned lists without affecting later calls
    users[0].append(-1)
    assert datasets.load_kosarak(max_users=1) == [[1, 2, 3]]
    with pytest.raises(ValueError):
        datasets.load_kosarak(max_users=-1)
    with pytest.raises(TypeError):
        datasets.load_kosarak(max_users=2.5)


def test_kosarak_item_counts():
    counts = datasets.kosarak_item_counts(max_users=1000)
    assert counts.iloc[0] >= counts.iloc[-1]
    assert counts.is_monotonic_decreasing
    assert counts.index.dtype == np.int64 and counts.dtype == np.int64
    users = datasets.load_kosarak(max_users=1000)
    assert counts.loc[6] == sum(6 in t for t in users)
    assert counts.max() <= 1000


def test_citation_and_bad_names():
    assert "CC BY 4.0" in datasets.citation("adult")
    assert "Cortez" in datasets.citation("wine") and "doi" not in datasets.citation("pima")
    for name in datasets.DATASETS:
        text = datasets.citation(name)
        assert text and "\n" not in text
    assert "FIMI" in datasets.citation("kosarak")
    with pytest.raises(ValueError, match="unknown data set"):
        datasets.citation("nonexistent")
