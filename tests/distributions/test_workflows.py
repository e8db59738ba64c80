"""Every PyMC workflow for every public distribution: one table-driven suite.

Rows are the workflow parts of the registry's entries (``tests/registry.py``, data in
``tests/cases/workflows.py``), one per distribution of ``pymc_dpnoise.distributions.__all__``
(a test fails if one has no row); columns are the workflows in :data:`WORKFLOWS`.  A cell either runs the workflow and
checks its result, or is listed in :data:`REFUSED` with the exception the package raises and
the reason, and the test checks that exactly that error is raised.  ``docs/workflows.rst`` is
generated from these tables by ``scripts/workflow_table.py`` (``test_docs_table_in_sync``).

Compile budget (tests/README.md): the default run compiles every graph with
:data:`CHEAP_MODE` -- PyTensor's full ``fast_run`` rewrites (so graph-level failures such as
the old k-RR ``Alloc`` shape error show up) executed by the Python VM without C or Numba code
generation, which compiles in well under a second.  The ``slow`` cells (nutpie, numpyro,
SMC, ADVI, find_MAP, LOO) run in PyTensor's default mode (Numba / JAX), as users run them.
Each distribution's cells share one model, one short NUTS posterior and one xdist worker.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import pathlib
import warnings

import cloudpickle
import numpy as np
import pymc as pm
import pytensor
import pytest
from cases.workflows import (
    BY_NAME,
    HELPERS,
    P4,
    SUMMARIES,
    D,
    K,
)
from pymc.testing import BaseTestDistributionRandom, assert_support_point_is_expected
from pytensor.compile.mode import Mode
from pytensor.link.vm import VMLinker
from registry import WORKFLOWS as SPECS  # the registry's workflow rows, in order

import pymc_dpnoise as pmd
from pymc_dpnoise import distributions as dists

CHEAP_MODE = Mode(linker=VMLinker(c_thunks=False, use_cloop=False), optimizer="fast_run").excluding(
    "fusion", "inplace"
)

#: groups of the hierarchical models and reports per group
N_GROUPS = 50
PER_GROUP = 2
N_REPORTS = N_GROUPS * PER_GROUP
#: reports of the out-of-sample predictive (different from N_REPORTS on purpose)
N_NEW = 7

# --------------------------------------------------------------------------------------------
# Columns
# --------------------------------------------------------------------------------------------

#: workflow id -> what the cell checks (the docs table's column legend)
WORKFLOWS = {
    "draw": "pm.draw of .dist(): event shape, finite values",
    "dist_shape": ".dist(size=...) and .dist(shape=...) draws have the requested shape",
    "pymc_testing": "pymc.testing.BaseTestDistributionRandom (check_rv_size, "
    "check_pymc_params_match_rv_op) and assert_support_point_is_expected where known",
    "dims_groups": f"coords/dims model, parameters indexed by a group index ({N_GROUPS} groups)",
    "point_logps": "model.point_logps() finite",
    "debug": "model.debug() for logp and random finds no problem",
    "graphviz": "pm.model_to_mermaid and the graph of pm.model_to_graphviz; the graphviz "
    "rendering itself is skipped when the graphviz package is absent",
    "prior_predictive": "pm.sample_prior_predictive shapes and dims",
    "sample_pymc": "pm.sample(nuts_sampler='pymc'), short chain",
    "posterior_predictive": "pm.sample_posterior_predictive shapes and dims",
    "set_data": f"pm.Data + pm.set_data with {N_NEW} new reports, predictions=True",
    "observe_do": "pm.observe of the prior model equals the observed model; pm.do fixes a prior",
    "pickle": "cloudpickle of the model and of its InferenceData",
    "sample_nutpie": "pm.sample(nuts_sampler='nutpie') (slow)",
    "sample_numpyro": "pm.sample(nuts_sampler='numpyro') (slow)",
    "loo": "pmd.compute_log_likelihood + pmd.loo (arviz.loo) (slow)",
    "find_map": "pm.find_MAP (slow)",
    "advi": "pm.fit(method='advi') (slow)",
    "smc": "pm.sample_smc (slow)",
}
SLOW = {"sample_nutpie", "sample_numpyro", "loo", "find_map", "advi", "smc"}

_SUMMARY_ONE_OBS = (
    NotImplementedError,
    "single observation of all N reports",
    "a summary is one observation of all N reports: there is no pointwise term per report "
    "(use the exact per-report class for LOO)",
)
_SUMMARY_SCALAR = (
    NotImplementedError,
    "summary distributions take scalar parameters",
    "summaries take scalar parameters (one summary table per group): build one variable per "
    "group instead of indexing parameters by a group index",
)
_SUMMARY_SIZE = (
    NotImplementedError,
    "size: summary distributions take scalar parameters",
    "a summary variable is one table of N reports; ``size``/``shape`` with batch axes would "
    "mean several tables: build one variable per table",
)
_SUMMARY_UNBATCHED = (
    NotImplementedError,
    "theta: summary distributions take unbatched parameters",
    "a scatter summary is one matrix of N reports: its parameters have no group axis (theta "
    "is one coefficient vector); build one variable per group",
)
_SUMMARY_SIZE_UNBATCHED = (
    NotImplementedError,
    "size: summary distributions take unbatched parameters",
    "a scatter summary is one matrix of N reports; ``size``/``shape`` with batch axes would "
    "mean several matrices: build one variable per summary",
)
#: helper -> (what is released, its latent): the refusal of its ``.dist()``
_HELPER_LATENTS = {
    "LaplaceNoisyMultinomial": ("released counts have", "a latent vector"),
    "LaplaceNoisyTruncatedNormal": ("released pair (sum x, sum x^2) has", "one latent per release"),
}


def _helper_no_dist(name):
    released, latent = _HELPER_LATENTS[name]
    return (
        NotImplementedError,
        rf"{name}\.dist: there is no stand-alone distribution",
        f"a model-building helper: the {released} no closed-form density, so it adds "
        f"{latent} to the model and has no ``.dist()``; the variable it returns is drawn in "
        "the prior and posterior predictive cells",
    )


#: the clipped summaries (scalar parameters); PerturbedLinRegSummary has its own messages
_CLIPPED_SUMMARIES = SUMMARIES - {"PerturbedLinRegSummary"}
#: (distribution, workflow) -> (exception, regex of its message, reason in the docs)
REFUSED = {
    **{(s, "loo"): _SUMMARY_ONE_OBS for s in SUMMARIES},
    **{(s, "dims_groups"): _SUMMARY_SCALAR for s in _CLIPPED_SUMMARIES},
    **{(s, "dist_shape"): _SUMMARY_SIZE for s in _CLIPPED_SUMMARIES},
    ("PerturbedLinRegSummary", "dims_groups"): _SUMMARY_UNBATCHED,
    ("PerturbedLinRegSummary", "dist_shape"): _SUMMARY_SIZE_UNBATCHED,
    **{
        (h, wf): _helper_no_dist(h)
        for h in HELPERS
        for wf in ("draw", "dist_shape", "pymc_testing")
    },
}


#: (distribution, workflow) -> (exception, regex of its message, the bug): cells that fail
#: because of a known bug, not by design.  The cell checks that exactly this failure still
#: happens (strict: it fails once the bug is fixed, so the entry must then be removed), and
#: the docs table shows it as failing.
KNOWN_BUGS: dict = {}  # (row, workflow) -> (exception, message, reason): none at present


def cell_status(spec_name, workflow):
    """'pass' or the stated reason, for the docs table."""
    if (spec_name, workflow) in REFUSED:
        return "refused: " + REFUSED[spec_name, workflow][2]
    if (spec_name, workflow) in KNOWN_BUGS:
        return "fails: " + KNOWN_BUGS[spec_name, workflow][2]
    return "pass"


def _run(spec, workflow, fn):
    """Run a cell: the workflow, or the check that it is refused (or fails by a known bug)
    with the stated error."""
    expected = REFUSED.get((spec.name, workflow)) or KNOWN_BUGS.get((spec.name, workflow))
    if expected is not None:
        exc, match, _ = expected
        with pytest.raises(exc, match=match):
            fn()
    else:
        fn()


def _params(slow=False):
    marks = [pytest.mark.slow] if slow else []
    return [
        pytest.param(s, marks=[pytest.mark.xdist_group(f"wf-{s.name}"), *marks], id=s.name)
        for s in SPECS
    ]


@pytest.fixture
def cheap_mode(request):
    """Compile with CHEAP_MODE in the default run (see the module docstring)."""
    with pytensor.config.change_flags(mode=CHEAP_MODE):
        yield


# --------------------------------------------------------------------------------------------
# Models and data, built once per distribution
# --------------------------------------------------------------------------------------------


def _group_index(n, rng=None):
    return np.arange(n) % N_GROUPS


def build_model(spec, data=None, groups=None, *, observed=True, summary_n=None):
    """The hierarchical model of a row: ``obs`` is observed through ``pm.Data`` (or not)."""
    summary = spec.name in SUMMARIES
    coords = dict(spec.coords)
    if summary:
        coords.update({d: range(n) for d, n in zip(spec.event_dims, spec.event, strict=True)})
        with pm.Model(coords=coords) as model:
            kwargs = spec.params(None)
            fixed = {k: v for k, v in spec.typical.items() if k not in kwargs}
            if observed:
                table = pm.Data("reports", data.table, dims=spec.event_dims)
                fixed["n"] = pm.Data("n_reports", float(data.n))
                spec.cls("obs", **kwargs, **fixed, observed=table, dims=spec.event_dims)
            else:
                spec.cls("obs", **kwargs, **fixed, dims=spec.event_dims)
        return model
    groups = _group_index(N_REPORTS) if groups is None else groups
    coords.update(group=range(N_GROUPS), report=range(len(groups)))
    dims = ("report", *spec.event_dims)
    with pm.Model(coords=coords) as model:
        g = pm.Data("g", groups, dims="report")
        kwargs = spec.params(g) | spec.fixed
        if observed:
            obs = pm.Data("reports", data, dims=dims)
            spec.cls("obs", **kwargs, observed=obs, dims=dims)
        else:
            spec.cls("obs", **kwargs, dims=dims)
    return model


@functools.cache
def dataset(name):
    """Reports drawn from the prior model of the row (the draws are the mechanism)."""
    spec = BY_NAME[name]
    if spec.name in SUMMARIES:
        return _summary_data(spec, 400, seed=11)
    with pytensor.config.change_flags(mode=CHEAP_MODE):
        prior = build_model(spec, observed=False)
        # fixed hyper-parameters away from the prior's tails
        fixed = pm.do(prior, {"sd": 0.5})
        return np.asarray(pm.draw(fixed["obs"], random_seed=7))


@dataclasses.dataclass
class SummaryData:
    """The observed value of a summary row and its number of reports."""

    table: np.ndarray
    n: int


def _summary_data(spec, n, seed):
    """A summary of ``n`` reports simulated with the row's typical parameters (NumPy)."""
    rng = np.random.default_rng(seed)
    t = spec.typical
    if "theta" in t:  # regression reports [x + noise, y + noise] -> their scatter matrix
        x = rng.multivariate_normal(np.zeros(D), t["cov"], size=n)
        y = x @ t["theta"] + rng.normal(0.0, t["sigma"], n)
        w = np.column_stack([x + rng.normal(0.0, t["sigma_x"], x.shape), y])
        w[:, -1] += rng.normal(0.0, t["sigma_y"], n)
        s = pmd.summaries.summarize_regression(w)
        return SummaryData(s.scatter, s.n)
    if "lam" in t:
        z = pmd.mechanisms.perturb_clipped_exponential(
            rng.exponential(1 / t["lam"], n), t["upper"], t["epsilon"], rng
        )
        s = pmd.summarize(z, 0.0, t["upper"], t["epsilon"], n_bins=6, model="exponential")
    else:
        z = pmd.mechanisms.perturb_clipped(
            rng.normal(t["mu"], t["sigma"], n), t["lower"], t["upper"], t["epsilon"], rng
        )
        s = pmd.summarize(z, t["lower"], t["upper"], t["epsilon"], n_bins=6)
    return SummaryData(s.table, s.n_total)


@functools.cache
def model_of(name):
    return build_model(BY_NAME[name], dataset(name))


@functools.cache
def posterior_of(name):
    """A short pymc-NUTS run (CHEAP_MODE), shared by the cells that need a posterior."""
    with pytensor.config.change_flags(mode=CHEAP_MODE), model_of(name):
        return pm.sample(
            draws=10,
            tune=10,
            chains=1,
            nuts_sampler="pymc",
            random_seed=3,
            progressbar=False,
            compute_convergence_checks=False,
            # at most 3 leapfrog steps per draw, in tuning too: the Python VM runs every op of
            # the gradient in Python (the cells check the workflow, not the posterior)
            max_treedepth=2,
            early_max_treedepth=2,
        )


# --------------------------------------------------------------------------------------------
# Meta: every public distribution has a row, every workflow a test
# --------------------------------------------------------------------------------------------


def test_every_public_distribution_has_a_row():
    names = sorted(s.name for s in SPECS)
    assert names == sorted(dists.__all__)
    for s in SPECS:
        assert s.cls is getattr(dists, s.name)


def test_every_refusal_is_a_known_cell():
    for spec_name, workflow in [*REFUSED, *KNOWN_BUGS]:
        assert spec_name in BY_NAME and workflow in WORKFLOWS
    assert not set(REFUSED) & set(KNOWN_BUGS)


# --------------------------------------------------------------------------------------------
# Default (cheap) workflows
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", _params())
def test_draw(spec, cheap_mode):
    def run():
        x = pm.draw(spec.cls.dist(**spec.typical), draws=3, random_seed=1)
        assert x.shape == (3, *spec.event)
        assert np.all(np.isfinite(x))

    _run(spec, "draw", run)


@pytest.mark.parametrize("spec", _params())
def test_dist_shape(spec, cheap_mode):
    def run():
        by_size = pm.draw(spec.cls.dist(**spec.typical, size=(2, 3)), random_seed=1)
        assert by_size.shape == (2, 3, *spec.event)
        by_shape = pm.draw(spec.cls.dist(**spec.typical, shape=(2, 3, *spec.event)), random_seed=1)
        assert by_shape.shape == (2, 3, *spec.event)

    _run(spec, "dist_shape", run)


@pytest.mark.parametrize("spec", _params())
def test_pymc_testing(spec, cheap_mode):
    class Check(BaseTestDistributionRandom):
        pymc_dist = spec.cls
        pymc_dist_params = spec.typical
        expected_rv_op_params = spec.typical if spec.rv_params == "typical" else spec.rv_params
        size = None if spec.name in SUMMARIES else 5
        # a summary is one table: only the empty sizes (batch sizes are refused, see dist_shape)
        batch = [] if spec.name in SUMMARIES else [1, (4,), (2, 3)]
        sizes_to_check = [None, (), *batch]
        sizes_expected = [spec.event, spec.event] + [
            (*np.atleast_1d(b), *spec.event) for b in batch
        ]
        checks_to_run = ["check_rv_size"] + (
            ["check_pymc_params_match_rv_op"] if spec.rv_params is not None else []
        )

    def run():
        Check().test_distribution()
        if spec.support_point is not None:
            params, expected = spec.support_point
            with pm.Model() as m:
                spec.cls("x", **params)
            assert_support_point_is_expected(m, expected)

    _run(spec, "pymc_testing", run)


@pytest.mark.parametrize("spec", _params())
def test_dims_groups(spec, cheap_mode):
    def run():
        if spec.name in SUMMARIES:
            # the refusal: the first parameter (mu, lam, theta) indexed by a group index
            name, value = next(iter(spec.typical.items()))
            with pm.Model():
                g = pm.Data("g", np.arange(3) % 2)
                effect = pm.Normal("effect", 0.0, 0.1, shape=(2, *np.shape(value)))
                spec.cls("obs", **{**spec.typical, name: value * pm.math.exp(effect)[g]})
            return
        model = model_of(spec.name)
        assert model.named_vars_to_dims["obs"] == ("report", *spec.event_dims)
        assert len(model.coords["group"]) == N_GROUPS
        grouped = [v for v, d in model.named_vars_to_dims.items() if d and d[0] == "group"]
        assert grouped, "no group-level parameter"
        logps = model.point_logps()
        assert np.isfinite(logps["obs"])

    _run(spec, "dims_groups", run)


@pytest.mark.parametrize("spec", _params())
def test_point_logps(spec, cheap_mode):
    def run():
        logps = model_of(spec.name).point_logps()
        assert set(logps) == {v.name for v in model_of(spec.name).basic_RVs}
        assert all(np.isfinite(v) for v in logps.values()), logps

    _run(spec, "point_logps", run)


@pytest.mark.parametrize("spec", _params())
def test_debug(spec, cheap_mode, capsys):
    def run():
        model = model_of(spec.name)
        for fn in ("logp", "random"):
            model.debug(fn=fn)
            out = capsys.readouterr().out
            assert "No problems found" in out, out

    _run(spec, "debug", run)


@pytest.mark.parametrize("spec", _params())
def test_graphviz(spec, cheap_mode):
    def run():
        model = model_of(spec.name)
        # the graph model_to_graphviz draws, built without the graphviz package
        graph = pm.model_graph.ModelGraph(model).make_compute_graph()
        assert "obs" in graph and any(graph.values())
        assert "obs" in pm.model_to_mermaid(model)
        pytest.importorskip("graphviz")
        src = pm.model_to_graphviz(model).source
        op = model["obs"].owner.op
        shown = {spec.cls.__name__, getattr(op, "name", None), *getattr(op, "_print_name", ())}
        # PyMC labels the node with the op's name, capitalised
        assert "obs" in src and any(name and name.lower() in src.lower() for name in shown), src

    _run(spec, "graphviz", run)


@pytest.mark.parametrize("spec", _params())
def test_prior_predictive(spec, cheap_mode):
    def run():
        with model_of(spec.name):
            prior = pm.sample_prior_predictive(draws=3, random_seed=2)
        obs = prior.prior_predictive["obs"]
        n = spec.event[0] if spec.name in SUMMARIES else N_REPORTS
        assert obs.shape[:3] == (1, 3, n)
        assert obs.dims[2:] == (
            spec.event_dims if spec.name in SUMMARIES else ("report", *spec.event_dims)
        )
        assert np.all(np.isfinite(obs.values))

    _run(spec, "prior_predictive", run)


@pytest.mark.parametrize("spec", _params())
def test_sample_pymc(spec, cheap_mode):
    def run():
        idata = posterior_of(spec.name)
        post = idata.posterior
        assert post.sizes["draw"] == 10
        for name in post.data_vars:
            assert np.all(np.isfinite(post[name].values)), name
        if spec.name not in SUMMARIES:
            assert any("group" in post[v].dims for v in post.data_vars)

    _run(spec, "sample_pymc", run)


@pytest.mark.parametrize("spec", _params())
def test_posterior_predictive(spec, cheap_mode):
    def run():
        idata = posterior_of(spec.name)
        with model_of(spec.name):
            pp = pm.sample_posterior_predictive(idata, random_seed=4, progressbar=False)
        obs = pp.posterior_predictive["obs"]
        assert obs.shape[:2] == (1, 10)
        assert obs.shape[2:] == np.shape(model_of(spec.name)["reports"].get_value())
        assert np.all(np.isfinite(obs.values))

    _run(spec, "posterior_predictive", run)


@pytest.mark.parametrize("spec", _params())
def test_set_data(spec, cheap_mode):
    def run():
        idata = posterior_of(spec.name)
        model = build_model(spec, dataset(spec.name))
        with model:
            if spec.name in SUMMARIES:
                new = _summary_data(spec, 50, seed=12)
                pm.set_data({"reports": new.table, "n_reports": float(new.n)})
                expect = (spec.event[0],)
            else:
                groups = np.arange(N_NEW) * 3 % N_GROUPS  # new reports of some groups
                placeholder = np.zeros((N_NEW, *spec.event), dtype=dataset(spec.name).dtype)
                pm.set_data({"g": groups, "reports": placeholder}, coords={"report": range(N_NEW)})
                expect = (N_NEW,)
            # a helper's latent is one per report: new reports get fresh (prior) latents
            latents = [v.name for v in model.free_RVs if v.name.startswith("obs_")]
            pp = pm.sample_posterior_predictive(
                idata,
                predictions=True,
                random_seed=5,
                progressbar=False,
                sample_vars=latents or None,
                var_names=["obs"],
            )
        obs = pp.predictions["obs"]
        assert obs.shape[:3] == (1, 10, *expect)
        assert np.all(np.isfinite(obs.values))
        if spec.name == "PerturbedLinRegSummary":
            # scatter matrices of 50 reports: E[S] = 50 C, C near the data's S / N (400)
            old = dataset(spec.name)
            ratio = np.trace(obs.values.mean((0, 1))) / 50 / (np.trace(old.table) / old.n)
            assert 0.5 < ratio < 2.0, ratio
        elif spec.name in SUMMARIES:
            # the simulated summaries count the new number of reports
            counts = obs.values[..., 0].sum(-1)
            assert np.all(counts == 50)

    _run(spec, "set_data", run)


@pytest.mark.parametrize("spec", _params())
def test_observe_do(spec, cheap_mode):
    def run():
        data = dataset(spec.name)
        prior = build_model(spec, observed=False)
        if spec.name in SUMMARIES:
            prior = build_model(spec, data)  # the summary's N is read from the data
            observed = prior
        else:
            observed = pm.observe(prior, {"obs": data})
            ref = model_of(spec.name).point_logps(round_vals=10)
            got = observed.point_logps(round_vals=10)
            # point_logps(round_vals=10) rounds both sides to 1e-10 absolute; the values are of
            # order 10-1000
            np.testing.assert_allclose(got["obs"], ref["obs"], rtol=1e-10)
        var, value = spec.do
        intervened = pm.do(observed, {var: value})
        with intervened:
            draws = pm.sample_prior_predictive(draws=3, random_seed=6)
        assert var not in intervened.free_RVs
        assert np.all(np.isfinite(draws.prior_predictive["obs"].values))

    _run(spec, "observe_do", run)


@pytest.mark.parametrize("spec", _params())
def test_pickle(spec, cheap_mode):
    def run():
        model = model_of(spec.name)
        idata = posterior_of(spec.name)
        model2 = cloudpickle.loads(cloudpickle.dumps(model))
        idata2 = cloudpickle.loads(cloudpickle.dumps(idata))
        point = model.initial_point()
        assert model2.point_logps(point) == model.point_logps(point)
        for name in idata.posterior.data_vars:
            np.testing.assert_array_equal(idata2.posterior[name], idata.posterior[name])

    _run(spec, "pickle", run)


# --------------------------------------------------------------------------------------------
# Slow workflows (default PyTensor mode: Numba, JAX for numpyro)
# --------------------------------------------------------------------------------------------


def _sample(name, sampler):
    with model_of(name):
        return pm.sample(
            draws=100,
            tune=100,
            chains=2,
            nuts_sampler=sampler,
            random_seed=8,
            progressbar=False,
        )


@functools.cache
def _nutpie_posterior(name):
    return _sample(name, "nutpie")


@pytest.mark.parametrize("spec", _params(slow=True))
def test_sample_nutpie(spec):
    _run(spec, "sample_nutpie", lambda: _check_posterior(_nutpie_posterior(spec.name)))


@pytest.mark.parametrize("spec", _params(slow=True))
def test_sample_numpyro(spec):
    _run(spec, "sample_numpyro", lambda: _check_posterior(_sample(spec.name, "numpyro")))


def _check_posterior(idata):
    post = idata.posterior
    assert post.sizes["chain"] == 2 and post.sizes["draw"] == 100
    for name in post.data_vars:
        assert np.all(np.isfinite(post[name].values)), name


@pytest.mark.parametrize("spec", _params(slow=True))
def test_loo(spec):
    def run():
        idata = _nutpie_posterior(spec.name).copy()
        with model_of(spec.name):
            pmd.compute_log_likelihood(idata, progressbar=False)
        ll = idata.log_likelihood["obs"]
        assert ll.attrs["pointwise_unit"].startswith("one report")
        assert ll.shape[2] == N_REPORTS
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # Pareto k warnings of a short run
            res = pmd.loo(idata, pointwise=True)
        assert np.isfinite(res.elpd) and res.n_data_points == N_REPORTS

    _run(spec, "loo", run)


@pytest.mark.parametrize("spec", _params(slow=True))
def test_find_map(spec):
    def run():
        model = model_of(spec.name)
        with model:
            idata = pm.find_MAP(
                progressbar=False,
                return_inferencedata=True,
                jitter=False,
                idata_kwargs={"include_transformed": True},
            )
        # the MAP point holds the transformed values too (sd_log__ next to sd)
        post = idata.posterior
        point = {
            v.name: np.asarray(post[v.name]).reshape(post[v.name].shape[2:])
            for v in model.value_vars
        }
        logps = model.point_logps(point)
        assert all(np.isfinite(v) for v in logps.values())

    _run(spec, "find_map", run)


@pytest.mark.parametrize("spec", _params(slow=True))
def test_advi(spec):
    def run():
        with model_of(spec.name):
            approx = pm.fit(n=300, method="advi", random_seed=9, progressbar=False)
            draws = approx.sample(20, random_seed=9)
        assert np.all(np.isfinite(approx.hist))
        for name in draws.posterior.data_vars:
            assert np.all(np.isfinite(draws.posterior[name].values))

    _run(spec, "advi", run)


@pytest.mark.parametrize("spec", _params(slow=True))
def test_smc(spec):
    def run():
        with model_of(spec.name):
            idata = pm.sample_smc(
                draws=100,
                chains=1,
                cores=1,
                random_seed=10,
                progressbar=False,
                compute_convergence_checks=False,
            )
        for name in idata.posterior.data_vars:
            assert np.all(np.isfinite(idata.posterior[name].values))

    _run(spec, "smc", run)


# --------------------------------------------------------------------------------------------
# The docs table is generated from these tables
# --------------------------------------------------------------------------------------------


def test_docs_table_in_sync():
    root = pathlib.Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "workflow_table", root / "scripts/workflow_table.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    committed = (root / "docs/workflows.rst").read_text()
    assert committed == mod.render(), (
        "docs/workflows.rst is out of date: run python scripts/workflow_table.py"
    )


# --------------------------------------------------------------------------------------------
# LOO on privatised reports (default run): uninformative reports and count-compressed data
# --------------------------------------------------------------------------------------------


def _idata_from_prior(model, draws=200, seed=0):
    """Prior draws standing in for a posterior: LOO's arithmetic does not need MCMC."""
    import xarray as xr

    with model:
        prior = pm.sample_prior_predictive(draws=draws, random_seed=seed)
    return xr.DataTree.from_dict({"posterior": prior.prior.to_dataset()})


@pytest.mark.xdist_group("wf-loo")
def test_loo_reports_without_information(cheap_mode):
    """All-zero OUE bit vectors: az.loo refuses them, pmd.loo gives their exact LOO term."""
    import arviz as az

    rng = np.random.default_rng(1)
    items = rng.choice(K, size=80, p=P4)
    reports = pmd.mechanisms.oue_perturb(items, K, 2.0, rng)
    empty = reports.sum(1) == 0
    assert 5 < empty.sum() < 60  # both kinds of report are present
    with pm.Model() as model:
        theta = pm.Dirichlet("theta", np.ones(K))
        pmd.OUELikelihood("obs", p=theta, epsilon=2.0, observed=reports)
    idata = _idata_from_prior(model)
    pmd.compute_log_likelihood(idata, model=model, progressbar=False)
    ll = idata.log_likelihood["obs"]
    spread = (ll.max(("chain", "draw")) - ll.min(("chain", "draw"))).values
    np.testing.assert_array_equal(spread == 0, empty)  # exactly the empty reports are flat
    with pytest.raises(ValueError, match="All tail values are the same"):
        az.loo(idata, pointwise=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Pareto k of prior draws
        res = pmd.loo(idata, pointwise=True)
        # the informative reports alone, through plain az.loo: same pointwise terms
        sub = idata.copy()
        sub["log_likelihood"] = idata["log_likelihood"].isel(obs_dim_0=np.flatnonzero(~empty))
        ref = az.loo(sub, pointwise=True)
    elpd_i = res.elpd_i.values
    # an uninformative report's LOO density is its (constant) likelihood, with k = 0
    np.testing.assert_allclose(elpd_i[empty], ll.values[0, 0, empty], rtol=1e-12)
    np.testing.assert_array_equal(res.pareto_k.values[empty], 0.0)
    np.testing.assert_allclose(elpd_i[~empty], ref.elpd_i.values, rtol=1e-10)
    assert res.n_data_points == len(reports)
    # LOO's elpd on the same log-likelihood values plus the empty-group terms: sums in another
    # order (n u of the terms) and PSIS's exp/log, 1e-10
    np.testing.assert_allclose(res.elpd, ref.elpd + ll.values[0, 0, empty].sum(), rtol=1e-10)


@pytest.mark.xdist_group("wf-loo")
def test_loo_count_compressed_reports(cheap_mode):
    """k-RR with counts=: one pointwise term per report, equal to the uncompressed model's."""
    rng = np.random.default_rng(2)
    reports = pmd.mechanisms.krr_perturb(rng.choice(K, size=120, p=P4), K, 1.0, rng)
    counts = np.bincount(reports, minlength=K).astype(float)
    with pm.Model() as full:
        theta = pm.Dirichlet("theta", np.ones(K))
        pmd.KRRLikelihood("obs", p=theta, epsilon=1.0, observed=reports)
    with pm.Model() as compressed:
        theta = pm.Dirichlet("theta", np.ones(K))
        pmd.KRRLikelihood("obs", p=theta, epsilon=1.0, counts=counts, observed=np.arange(K))
    idata = _idata_from_prior(full)
    a = pmd.compute_log_likelihood(idata.copy(), model=full, progressbar=False)
    b = pmd.compute_log_likelihood(idata.copy(), model=compressed, progressbar=False)
    # plain PyMC: one term per pattern, weighted by its count (what LOO must not use)
    plain = pm.compute_log_likelihood(idata.copy(), model=compressed, progressbar=False)
    assert plain.log_likelihood["obs"].shape[-1] == K
    lb = b.log_likelihood["obs"]
    assert lb.shape[-1] == len(reports) and lb.attrs["pointwise_unit"].startswith("one report")
    order = np.argsort(reports, kind="stable")
    # the same log-likelihood values reordered: bitwise, up to a few ulp where the graph evaluates
    # them in another batch layout
    np.testing.assert_allclose(lb.values, a.log_likelihood["obs"].values[..., order], rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        # LOO on the same values in another order: sums in another order (n u of the terms) and
        # PSIS's exp/log, 1e-10
        np.testing.assert_allclose(pmd.loo(b).elpd, pmd.loo(a).elpd, rtol=1e-10)
    # weights are not multiplicities: refused
    with pm.Model() as weighted:
        theta = pm.Dirichlet("theta", np.ones(K))
        pmd.KRRLikelihood("obs", p=theta, epsilon=1.0, counts=counts + 0.5, observed=np.arange(K))
    with pytest.raises(ValueError, match="not integers"):
        pmd.compute_log_likelihood(idata.copy(), model=weighted, progressbar=False)


@pytest.mark.xdist_group("wf-loo")
def test_loo_refuses_a_summary(cheap_mode):
    spec = BY_NAME["LaplacePerturbedClippedNormalSummary"]
    model = build_model(spec, dataset(spec.name))
    idata = _idata_from_prior(model, draws=20)
    with pytest.raises(NotImplementedError, match="single observation of all N reports"):
        pmd.compute_log_likelihood(idata, model=model)


# --------------------------------------------------------------------------------------------
# k-RR in a 50-group hierarchical model (issue 16: it used to fail to compile)
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.xdist_group("wf-krr50")
def test_krr_50_groups_recovers_group_frequencies():
    """50 groups, p per group from a logistic-normal hierarchical prior, NUTS (default mode)."""
    import arviz as az

    rng = np.random.default_rng(50)
    n_groups, per_group, eps = 50, 400, 2.0
    true_logits = np.array([1.0, 0.5, 0.0, -0.5]) + 0.7 * rng.normal(size=(n_groups, K))
    p_true = np.exp(true_logits) / np.exp(true_logits).sum(-1, keepdims=True)
    groups = np.repeat(np.arange(n_groups), per_group)
    items = np.array([rng.choice(K, p=p_true[g]) for g in groups])
    reports = pmd.mechanisms.krr_perturb(items, K, eps, rng)
    freq = np.array(
        [np.bincount(items[groups == g], minlength=K) / per_group for g in range(n_groups)]
    )
    with pm.Model(coords={"group": range(n_groups), "item": range(K)}):
        g = pm.Data("g", groups)
        mu = pm.Normal("mu", 0.0, 1.5, dims="item")
        sd = pm.HalfNormal("sd", 1.0)
        z = pm.Normal("z", 0.0, 1.0, dims=("group", "item"))
        p = pm.Deterministic("p", pm.math.softmax(mu + sd * z, axis=-1), dims=("group", "item"))
        pmd.KRRLikelihood("y", p=p[g], epsilon=eps, observed=reports)
        idata = pm.sample(
            draws=400, tune=400, chains=2, random_seed=51, progressbar=False, nuts_sampler="pymc"
        )
    post = idata.posterior["p"].values.reshape(-1, n_groups, K)
    mean = post.mean(0)
    lo, hi = np.quantile(post, [0.05, 0.95], axis=0)
    mae = np.abs(mean - freq).mean()
    coverage = ((lo <= freq) & (freq <= hi)).mean()
    rhat = float(az.rhat(idata, var_names=["p"])["p"].max())
    divergences = int(idata.sample_stats["diverging"].sum())
    # the noise-free standard error of a group frequency is about 0.02 here; k-RR at eps = 2
    # inflates it to about 0.03
    print(
        f"k-RR 50 groups: MAE {mae:.4f}, 90% coverage {coverage:.3f}, max rhat {rhat:.3f}, "
        f"divergences {divergences}"
    )
    assert rhat < 1.05
    assert mae < 0.04
    assert 0.8 <= coverage <= 0.99
