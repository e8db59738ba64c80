"""The loaders of :mod:`pymc_dpnoise.datasets` (re-exported there; see its docstring)."""

from __future__ import annotations

import gzip
import io
import re
from collections import Counter
from functools import cache
from importlib.resources import files

import numpy as np
import pandas as pd

__all__ = [
    "DATASETS",
    "citation",
    "kosarak_item_counts",
    "load_adult",
    "load_kosarak",
    "load_pima",
    "load_wine",
]

#: names accepted by :func:`citation`, with the file-name prefix used in ``ATTRIBUTION.md``
DATASETS = {"adult": "adult", "wine": "winequality", "pima": "pima", "kosarak": "kosarak"}

#: Pima column names, in file order (the ``.names`` file describes them in words; see
#: :func:`load_pima` for the mapping)
PIMA_COLUMNS = (
    "pregnancies",
    "glucose",
    "blood_pressure",
    "skin_thickness",
    "insulin",
    "bmi",
    "diabetes_pedigree",
    "age",
    "outcome",
)


def _resource(name: str):
    return files(__package__).joinpath("data", name)


def _read_text(name: str) -> str:
    return _resource(name).read_text(encoding="utf-8")


def _read_gz_bytes(name: str) -> bytes:
    with _resource(name).open("rb") as fh, gzip.GzipFile(fileobj=fh) as gz:
        return gz.read()


def _snake(name: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", name.strip()).strip("_").lower()


@cache
def _adult_columns() -> tuple[str, ...]:
    # attribute lines at the end of adult.names look like "age: continuous." or
    # "workclass: Private, Self-emp-not-inc, ..."; the label comes last
    names = re.findall(r"^([a-z][a-z-]*):\s", _read_text("adult.names"), flags=re.MULTILINE)
    if len(names) != 14:  # pragma: no cover - the shipped file has 14 attributes
        raise RuntimeError(f"adult.names: expected 14 attributes, found {len(names)}")
    return (*(_snake(n) for n in names), "income")


@cache
def _wine_columns() -> tuple[str, ...]:
    # "   1 - fixed acidity" ... "   12 - quality (score between 0 and 10)"
    found = re.findall(r"^\s+(\d+) - ([^(\n]+)", _read_text("winequality.names"), re.MULTILINE)
    names = [_snake(n) for _, n in found]
    if len(names) != 12:  # pragma: no cover - the shipped file has 11 inputs + quality
        raise RuntimeError(f"winequality.names: expected 12 attributes, found {len(names)}")
    return tuple(names)


def _read_adult_split(split: str) -> pd.DataFrame:
    raw = _read_gz_bytes(f"adult-{split}.csv.gz")
    df = pd.read_csv(
        io.BytesIO(raw),
        header=None,
        names=list(_adult_columns()),
        skipinitialspace=True,
        na_values=["?"],
        skip_blank_lines=True,
    )
    income = df.pop("income").str.rstrip(".")
    unknown = set(income.unique()) - {">50K", "<=50K"}
    if unknown:  # pragma: no cover - guards against a corrupted file
        raise RuntimeError(f"adult-{split}: unexpected labels {sorted(unknown)}")
    df["income_gt_50k"] = (income == ">50K").astype(np.int64)
    return df


def _one_or_both(name: str, value: str, parts: tuple[str, str], read) -> pd.DataFrame:
    """``read(value)`` for one of the two ``parts``; for ``"both"`` the two concatenated, with a
    column ``name`` saying which part each row comes from."""
    if value not in (*parts, "both"):
        raise ValueError(f"`{name}` must be '{parts[0]}', '{parts[1]}' or 'both'; got {value!r}")
    if value != "both":
        return read(value)
    return pd.concat([read(p).assign(**{name: p}) for p in parts], ignore_index=True)


def load_adult(split: str = "train") -> pd.DataFrame:
    """UCI Adult census income data (Becker & Kohavi 1996).

    Parameters
    ----------
    split : {"train", "test", "both"}
        ``"train"`` (32,561 rows), ``"test"`` (16,281 rows) or both concatenated
        (48,842 rows, with a ``split`` column holding ``"train"``/``"test"``).

    Returns
    -------
    pandas.DataFrame
        The 14 attributes named as in ``adult.names`` (hyphens turned into underscores, e.g.
        ``education_num``, ``hours_per_week``) and the label ``income_gt_50k`` (int64, 1 for
        ``>50K``).  The test file's labels end with a period (``>50K.``); it is removed.
        Unknown values (``?`` in the files) are missing (NaN).

    Examples
    --------
    >>> from pymc_dpnoise.datasets import load_adult
    >>> df = load_adult("test")
    >>> df.shape
    (16281, 15)
    >>> list(df.columns[:5])
    ['age', 'workclass', 'fnlwgt', 'education', 'education_num']
    >>> sorted(df["income_gt_50k"].unique().tolist())
    [0, 1]
    """
    return _one_or_both("split", split, ("train", "test"), _read_adult_split)


def _read_wine_colour(colour: str) -> pd.DataFrame:
    raw = _read_gz_bytes(f"winequality-{colour}.csv.gz")
    df = pd.read_csv(io.BytesIO(raw), header=None, names=list(_wine_columns()))
    df["quality"] = df["quality"].astype(np.int64)
    return df


def load_wine(colour: str = "red") -> pd.DataFrame:
    """Wine quality data (Cortez et al. 2009): physico-chemical tests and a quality score.

    Parameters
    ----------
    colour : {"red", "white", "both"}
        ``"red"`` (1,599 rows), ``"white"`` (4,898 rows), or both concatenated (6,497 rows, red
        first) with an extra ``colour`` column holding ``"red"``/``"white"``.

    Returns
    -------
    pandas.DataFrame
        Eleven float64 inputs named as in ``winequality.names`` in snake case
        (``fixed_acidity``, ``volatile_acidity``, ..., ``alcohol``) and the int64 target
        ``quality`` (0-10).

    Examples
    --------
    >>> from pymc_dpnoise.datasets import load_wine
    >>> load_wine("red").shape
    (1599, 12)
    >>> both = load_wine("both")
    >>> both["colour"].value_counts().to_dict()
    {'white': 4898, 'red': 1599}
    >>> list(both.columns[-3:])
    ['alcohol', 'quality', 'colour']
    """
    return _one_or_both("colour", colour, ("red", "white"), _read_wine_colour)


def load_pima() -> pd.DataFrame:
    """Pima Indians diabetes data (NIDDK; 768 women aged 21 or more).

    Returns
    -------
    pandas.DataFrame
        768 rows and the columns below (attribute numbers as in
        ``pima-indians-diabetes.names``).  Zeros in ``glucose``, ``blood_pressure``,
        ``skin_thickness``, ``insulin`` and ``bmi`` stand for missing measurements in the
        source; they are kept as they are.

        ====  =====================  ==================================================
        no.   column                 description
        ====  =====================  ==================================================
        1     ``pregnancies``        number of times pregnant (int64)
        2     ``glucose``            plasma glucose at 2 h in an oral tolerance test
        3     ``blood_pressure``     diastolic blood pressure (mm Hg)
        4     ``skin_thickness``     triceps skin fold thickness (mm)
        5     ``insulin``            2-hour serum insulin (mu U/ml)
        6     ``bmi``                body mass index (kg/m², float64)
        7     ``diabetes_pedigree``  diabetes pedigree function (float64)
        8     ``age``                age in years (int64)
        9     ``outcome``            class variable, 1 = tested positive (int64)
        ====  =====================  ==================================================

    Examples
    --------
    >>> from pymc_dpnoise.datasets import load_pima
    >>> df = load_pima()
    >>> df.shape
    (768, 9)
    >>> df["outcome"].value_counts().sort_index().to_dict()
    {0: 500, 1: 268}
    """
    raw = _read_gz_bytes("pima-indians-diabetes.csv.gz")
    return pd.read_csv(io.BytesIO(raw), header=None, names=list(PIMA_COLUMNS))


def load_kosarak(max_users: int | None = None) -> list[list[int]]:
    """Kosarak click-stream transactions: the pages each user visited.

    The shipped file holds the first 36,682 users of the FIMI Kosarak data, one line per
    user with space-separated page ids.  (The file was cut at a byte limit, so its last line
    is incomplete; that partial line is not returned.)

    Parameters
    ----------
    max_users : int, optional
        Return only the first ``max_users`` users (all 36,682 by default).

    Returns
    -------
    list of list of int
        One list of page ids per user, in file order (a page may occur more than once in a
        transaction).

    See Also
    --------
    kosarak_item_counts : how many users visited each page.

    Examples
    --------
    >>> from pymc_dpnoise.datasets import load_kosarak
    >>> load_kosarak(max_users=3)
    [[1, 2, 3], [1], [4, 5, 6, 7]]
    >>> len(load_kosarak())
    36682
    """
    if max_users is not None:
        if isinstance(max_users, bool) or not isinstance(max_users, int | np.integer):
            raise TypeError(f"`max_users` must be an int or None; got {max_users!r}")
        if max_users < 0:
            raise ValueError(f"`max_users` must be >= 0; got {max_users}")
    return [list(t) for t in _kosarak_all()[:max_users]]


@cache
def _kosarak_all() -> tuple[tuple[int, ...], ...]:
    text = _read_gz_bytes("kosarak-head.dat.gz").decode("ascii")
    lines = text.split("\n")
    # complete lines end with "\n"; whatever follows the last newline is a truncated line
    lines = lines[:-1]
    return tuple(tuple(int(tok) for tok in line.split()) for line in lines)


def kosarak_item_counts(max_users: int | None = None) -> pd.Series:
    """Number of users who visited each page in :func:`load_kosarak` (a histogram).

    Parameters
    ----------
    max_users : int, optional
        Count only the first ``max_users`` users.

    Returns
    -------
    pandas.Series
        Indexed by page id (int64, name ``"item"``), values = number of users whose
        transaction contains the page (each user counts once per page), sorted from most to
        least visited (ties by page id).

    Examples
    --------
    >>> from pymc_dpnoise.datasets import kosarak_item_counts
    >>> counts = kosarak_item_counts(max_users=3)
    >>> counts.to_dict()
    {1: 2, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1}
    >>> int(kosarak_item_counts().iloc[0]) <= 36682
    True
    """
    counter: Counter[int] = Counter()
    for t in load_kosarak(max_users):
        counter.update(set(t))
    s = pd.Series(counter, dtype=np.int64)
    s.index = s.index.astype(np.int64)
    s.index.name = "item"
    s.name = "users"
    order = np.lexsort((s.index.to_numpy(), -s.to_numpy()))
    return s.iloc[order]


@cache
def _attribution() -> tuple[dict[str, str], list[str]]:
    text = _read_text("ATTRIBUTION.md")
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and ".gz" in cells[0]:
            rows[cells[0]] = " | ".join(cells)
    refs_text = text.split("References:", 1)[1] if "References:" in text else ""
    refs_text = " ".join(refs_text.split())
    # references start with "Surname, I." after the end of the previous one
    refs = [r.strip() for r in re.split(r"(?<=\.)\s+(?=[A-Z][a-z]+, [A-Z]\.)", refs_text)]
    return rows, [r for r in refs if r]


def citation(name: str) -> str:
    """Attribution text for a shipped data set, from ``data/ATTRIBUTION.md``.

    Quote it when you publish results obtained with the data (their licences, e.g. CC BY 4.0,
    require attribution).

    Parameters
    ----------
    name : {"adult", "wine", "pima", "kosarak"}

    Returns
    -------
    str
        The files, a short description, provenance and licence, followed by the reference
        when ``ATTRIBUTION.md`` lists one.

    Examples
    --------
    >>> from pymc_dpnoise.datasets import citation
    >>> print(citation("adult"))  # doctest: +NORMALIZE_WHITESPACE
    adult-train.csv.gz, adult-test.csv.gz, adult.names: UCI Adult census income (14 attributes,
    label `>50K`); test labels end with a period. Source and licence: UCI Machine Learning
    Repository, Becker & Kohavi 1996, CC BY 4.0. Reference: Becker, B. & Kohavi, R. (1996)
    Adult. UCI ML Repository, doi:10.24432/C5XW20.
    """
    if name not in DATASETS:
        raise ValueError(f"unknown data set {name!r}; choose one of {sorted(DATASETS)}")
    prefix = DATASETS[name]
    rows, refs = _attribution()
    row = next((r for f, r in rows.items() if f.startswith(prefix)), None)
    if row is None:  # pragma: no cover - ATTRIBUTION.md lists every shipped data set
        raise RuntimeError(f"ATTRIBUTION.md has no entry for {name!r}")
    files_, _rows, what, source = row.split(" | ")
    out = f"{files_}: {what.rstrip('.')}. Source and licence: {source.rstrip('.')}."
    first_author = {"adult": "Becker", "wine": "Cortez"}.get(name)
    ref = next((r for r in refs if first_author and r.startswith(first_author)), None)
    if ref:
        out += f" Reference: {ref}"
    return out
