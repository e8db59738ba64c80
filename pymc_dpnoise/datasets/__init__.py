"""Loaders for the real data sets shipped with pymc-dpnoise (no downloads).

The files live in ``pymc_dpnoise/datasets/data`` and are read with :mod:`importlib.resources`,
so the loaders work from a wheel, an editable install or a zip.  Nothing is fetched from the
network.  They are the public data sets the implemented papers use:

=====================  ==========================  ==================================================
loader                 rows                        used in the papers for
=====================  ==========================  ==================================================
:func:`load_adult`     32,561 train + 16,281 test  logistic regression (income > 50K)
:func:`load_wine`      1,599 red + 4,898 white     linear regression (quality score)
:func:`load_pima`      768                         logistic regression (diabetes outcome)
:func:`load_kosarak`   36,682 users                histogram / frequency estimation (clicked pages)
=====================  ==========================  ==================================================

The data sets keep their own licences; :func:`citation` returns the attribution to quote
(from ``data/ATTRIBUTION.md``).

The feature matrices, train/test splits and scaling the papers' experiments apply to them
(:func:`wine_split`, :func:`adult_split`, :func:`pima_data`, :func:`scale_features`, ...) are in
:mod:`pymc_dpnoise.datasets.features` and exported here; the loaders live in
:mod:`pymc_dpnoise.datasets.loaders` (which ``features`` imports, so that nothing in this
subpackage imports its ``__init__``).
"""

from . import features, loaders
from .features import *  # noqa: F403 (re-exported: see features.__all__)
from .loaders import *  # noqa: F403 (re-exported: see loaders.__all__)
from .loaders import PIMA_COLUMNS  # noqa: F401 (a public constant, not in __all__)

__all__ = [*loaders.__all__, *features.__all__]
