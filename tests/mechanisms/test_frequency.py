"""The frequency-oracle mechanisms (``pymc_dpnoise.mechanisms.frequency``): one privacy-budget
ceiling shared with the likelihoods, and the packed-row compression of bit-vector reports."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def test_one_max_epsilon():
    from pymc_dpnoise.distributions import frequency as dfreq
    from pymc_dpnoise.mechanisms import frequency as mfreq

    assert dfreq.MAX_EPSILON is mfreq.MAX_EPSILON
    src = (Path(dfreq.__file__)).read_text()
    assert "MAX_EPSILON =" not in src


def test_compress_reports_packed_rows_match_unique():
    from pymc_dpnoise.mechanisms import compress_reports

    rng = np.random.default_rng(3)
    for k in (1, 7, 8, 13, 64, 70):
        z = (rng.random((500, k)) < 0.3).astype(np.int8)
        pat, cnt = compress_reports(z)
        ref_pat, ref_cnt = np.unique(z, axis=0, return_counts=True)
        np.testing.assert_array_equal(pat, ref_pat)
        np.testing.assert_array_equal(cnt, ref_cnt)
        assert pat.dtype == z.dtype and cnt.sum() == 500
