"""BayesNet: layout, counts against brute force, validation, pgmpy agreement (slow)."""

import itertools
import warnings

import numpy as np
import pytest

from pymc_dpnoise.posterior_release.network import BayesNet, as_bayesnet


def brute_counts(x, parents, card):
    """Counts by looping over records and enumerating parent configurations (itertools order)."""
    out = {}
    for i, ps in enumerate(parents):
        configs = list(itertools.product(*[range(card[p]) for p in ps]))
        tab = np.zeros((len(configs), card[i]), dtype=int)
        for row in x:
            tab[configs.index(tuple(row[p] for p in ps)), row[i]] += 1
        out[i] = tab
    return out


def test_counts_hand_computed_example_1():
    # X0 -> X1: Delta alpha_{1,j} = #(x1 = 1, x0 = j), Delta beta_{1,j} = #(x1 = 0, x0 = j)
    x = np.array([[0, 0], [0, 1], [1, 1], [1, 1], [1, 0]])
    c = BayesNet.from_parents({0: (), 1: (0,)}).counts(x)
    np.testing.assert_array_equal(c[0], [[2, 3]])
    np.testing.assert_array_equal(c[1], [[1, 1], [1, 2]])


@pytest.mark.parametrize(
    "parents,card",
    [
        ({0: (), 1: (0,), 2: (0, 1), 3: (2,)}, 2),
        ({0: (2,), 1: (), 2: (1,), 3: (1, 0)}, (2, 3, 4, 2)),  # categorical, non-sorted order
    ],
)
def test_counts_match_brute_force(parents, card):
    net = BayesNet.from_parents(parents, card)
    rng = np.random.default_rng(0)
    x = np.column_stack([rng.integers(0, k, 200) for k in net.cardinality])
    got = net.counts(x)
    ref = brute_counts(x, net.parents, net.cardinality)
    for i in range(net.n_nodes):
        np.testing.assert_array_equal(got[i], ref[i])
        assert got[i].sum() == 200  # every record adds one count to every node
    # parent_configurations lists the configurations in the order of the rows
    for i in range(net.n_nodes):
        pc = net.parent_configurations(i)
        assert pc.shape == (net.n_configs[i], len(net.parents[i]))
        if len(net.parents[i]):
            j = net.config_index(x, i)
            np.testing.assert_array_equal(pc[j], x[:, list(net.parents[i])])


def test_naive_bayes_and_order():
    net = BayesNet.naive_bayes(4, class_column=2)
    assert net.parents == ((2,), (2,), (), (2,), (2,))
    assert net.order[0] == 2
    assert net.n_configs == (2, 2, 1, 2, 2)
    assert net.n_rows == 9
    assert net.is_binary
    chain = BayesNet.from_parents({0: (1,), 1: (2,), 2: ()})
    assert chain.order == (2, 1, 0)


@pytest.mark.parametrize(
    "parents,match",
    [
        ({0: (0,)}, r"`parents` must form a directed acyclic graph; cycle: 0 -> 0"),
        ({0: (1,), 1: (0,)}, r"`parents` must form a directed acyclic graph"),
        ({0: (2,), 1: (0,), 2: (1,)}, r"cycle: .*->.*->.*->"),
        ({0: (), 2: (0,)}, r"`parents` must have every column 0..2 as a key.*missing \[1\]"),
        ({0: (), 1: (0, 0)}, r"`parents` of node 1 repeat a column"),
        ({0: (), 1: (5,)}, r"`parents` refers to column 5"),
        ({0: (), 1: (-1,)}, r"`parents` refers to column -1"),
    ],
)
def test_bad_parents(parents, match):
    with pytest.raises(ValueError, match=match):
        BayesNet.from_parents(parents)


def test_bad_parents_types_and_cardinality():
    with pytest.raises(TypeError, match="`parents` must be a mapping"):
        BayesNet.from_parents([(), (0,)])
    with pytest.raises(TypeError, match="`parents` must hold integer column indices"):
        BayesNet.from_parents({0: (), 1: ("a",)})
    with pytest.raises(ValueError, match="`cardinality` entries must be integers >= 2"):
        BayesNet.from_parents({0: ()}, 1)
    with pytest.raises(ValueError, match="`cardinality` has 1 entries for 2 nodes"):
        BayesNet.from_parents({0: (), 1: ()}, (2,))
    with pytest.raises(ValueError, match="`n_features` must be >= 1"):
        BayesNet.naive_bayes(0)


@pytest.mark.parametrize(
    "data,match",
    [
        ([[0, 2], [1, 0]], r"`data` column 1 must be binary \(0/1\); got 2 in record 0"),
        ([[0, -1]], r"`data` column 1 must be binary"),
        ([[0.5, 1.0]], r"`data` must hold integer category codes"),
        ([[np.nan, 1.0]], r"`data` must hold integer category codes"),
        ([[0, 1, 1]], r"`data` has 3 columns but the network has 2 nodes"),
        ([0, 1], r"`data` must be a 2-d array"),
        (np.zeros((0, 2)), r"`data` has no records"),
        ([["a", "b"]], r"`data` must be numeric"),
    ],
)
def test_bad_data(data, match):
    net = BayesNet.from_parents({0: (), 1: (0,)})
    with pytest.raises(ValueError, match=match):
        net.check_data(data)


def test_data_accepts_bool_and_integral_floats():
    net = BayesNet.from_parents({0: (), 1: (0,)})
    a = net.counts(np.array([[True, False], [True, True]]))
    b = net.counts(np.array([[1.0, 0.0], [1.0, 1.0]]))
    for i in (0, 1):
        np.testing.assert_array_equal(a[i], b[i])
    cat = BayesNet.from_parents({0: ()}, 3)
    with pytest.raises(ValueError, match=r"`data` column 0 must be in 0..2; got 3"):
        cat.check_data([[3]])


def test_as_bayesnet_checks_columns():
    with pytest.raises(ValueError, match="`parents` describes 2 columns but `data` has 3"):
        as_bayesnet({0: (), 1: ()}, np.zeros((4, 3)))


def test_log_likelihood_and_sampling():
    net = BayesNet.from_parents({0: (), 1: (0,), 2: (0, 1)}, (2, 3, 2))
    rng = np.random.default_rng(1)
    theta = net.sample_parameters(2.0, rng)
    x = net.sample_data(theta, 40_000, rng)
    # brute-force log-likelihood of a few records
    ll = 0.0
    for row in x[:50]:
        ll += np.log(theta[0][0, row[0]])
        ll += np.log(theta[1][row[0], row[1]])
        ll += np.log(theta[2][row[0] * 3 + row[1], row[2]])
    assert net.log_likelihood(theta, x[:50]) == pytest.approx(ll)
    # ancestral sampling reproduces the CPTs
    c = net.counts(x)
    for i in range(3):
        freq = c[i] / c[i].sum(axis=1, keepdims=True)
        se = np.sqrt(theta[i] * (1 - theta[i]) / c[i].sum(axis=1, keepdims=True))
        assert np.all(np.abs(freq - theta[i]) < 5 * se + 1e-12)
    with pytest.raises(ValueError, match="`theta` rows for node 0 must sum to 1"):
        net.check_theta({0: np.array([[0.5, 0.6]]), 1: theta[1], 2: theta[2]})
    with pytest.raises(ValueError, match="`prior` concentrations must be finite and > 0"):
        net.prior_tables(0.0)


@pytest.mark.slow
def test_counts_and_cpd_layout_agree_with_pgmpy():
    """pgmpy (6-15 s to import) as an independent reference for counts and the CPD layout."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pgmpy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgmpy.estimators import MaximumLikelihoodEstimator
        from pgmpy.models import DiscreteBayesianNetwork

    net = BayesNet.from_parents({0: (), 1: (), 2: (0, 1), 3: (2, 0)}, (2, 3, 2, 2))
    rng = np.random.default_rng(2)
    theta = net.sample_parameters(1.0, rng)
    x = net.sample_data(theta, 500, rng)
    names = ["a", "b", "c", "d"]
    df = pd.DataFrame(x, columns=names)
    model = DiscreteBayesianNetwork([("a", "c"), ("b", "c"), ("c", "d"), ("a", "d")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = MaximumLikelihoodEstimator(model, df)
        counts = net.counts(x)
        for i, name in enumerate(names):
            sc = est.state_counts(name)
            ps = [names[p] for p in net.parents[i]]
            full = sc.reindex(index=range(net.cardinality[i]), fill_value=0)
            if len(ps) > 1:
                # pgmpy may order the evidence differently: put the levels in our order
                full.columns = full.columns.reorder_levels(ps)
                cols = pd.MultiIndex.from_tuples(
                    [tuple(r) for r in net.parent_configurations(i)], names=ps
                )
                full = full.reindex(columns=cols, fill_value=0)
            elif ps:
                full = full.reindex(columns=range(net.n_configs[i]), fill_value=0)
            np.testing.assert_array_equal(full.to_numpy().T, counts[i])
    pg = net.to_pgmpy(theta, names)
    assert pg.check_model()
    for i, name in enumerate(names):
        cpd = pg.get_cpds(name)
        np.testing.assert_allclose(cpd.get_values().T, theta[i])
