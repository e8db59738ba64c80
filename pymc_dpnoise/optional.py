"""Optional dependencies: one place that imports them and says which extra to install.

A plain ``pip install pymc-dpnoise`` installs what every distribution, mechanism, summary and
the command line need.  A few features need more, each declared as an extra in
``pyproject.toml``:

* ``samplers`` (nutpie, NumPyro, JAX): ``pm.sample(nuts_sampler="nutpie")`` or
  ``"numpyro"``, the command line's ``--sampler nutpie`` / ``numpyro``,
  :func:`pymc_dpnoise.diagnostics.sample_compiled`, simulation-based calibration with
  ``sampler="nutpie"``;
* ``zarr``: ``pymc-dpnoise fit ... --save PATH.zarr``;
* ``opendp``: :mod:`pymc_dpnoise.mechanisms.opendp_releases`;
* ``pgmpy``: :meth:`pymc_dpnoise.posterior_release.BayesNet.to_pgmpy`;
* ``dataframes`` (Polars, PyArrow, Dask): summaries of those frames (NumPy, pandas and DuckDB
  files need nothing more);
* ``notebooks``: the experiments of :mod:`pymc_dpnoise.experiments` and their notebooks
  (``samplers`` and ``opendp``, plus Jupyter and ``multi-freq-ldpy``).

:func:`require` imports such a package or raises :class:`MissingOptionalDependency` (an
:class:`ImportError`) whose message names the feature and the ``pip install`` line.
"""

from __future__ import annotations

import importlib
import importlib.util

__all__ = ["MissingOptionalDependency", "require"]


class MissingOptionalDependency(ModuleNotFoundError):
    """An optional package a feature needs is not installed; the message names the extra."""


def require(
    module: str, *, extra: str, feature: str, package: str | None = None, load: bool = True
):
    """Import ``module`` of an optional package, or say which extra installs it.

    Parameters
    ----------
    module : str
        Module to import, e.g. ``"zarr"`` or ``"opendp.prelude"``.
    extra : str
        The extra of ``pymc-dpnoise`` that installs it (declared in ``pyproject.toml``).
    feature : str
        What needs it, as the user asked for it (``"--save post.zarr"``,
        ``"sample_compiled"``): the message starts with it.
    package : str, optional
        The distribution name to install, when it differs from the top-level module
        (``"multi-freq-ldpy"`` for ``multi_freq_ldpy``).
    load : bool, default True
        False: only check that the module can be found, without importing it (a check made
        before a long computation whose result the package writes; importing ``zarr`` takes
        seconds).

    Returns
    -------
    module or None
        The imported module (None with ``load=False``).

    Raises
    ------
    MissingOptionalDependency
        When ``module`` (or its top-level package) is not installed.  An ``ImportError``
        raised *inside* an installed package (e.g. one of its own dependencies missing) is
        not disguised: it propagates unchanged.
    """
    parts = module.split(".")
    ours = {".".join(parts[: i + 1]) for i in range(len(parts))}
    try:
        if load:
            return importlib.import_module(module)
        try:
            found = importlib.util.find_spec(module) is not None
        except ValueError:  # sys.modules holds None for it: an import would fail
            found = False
        if found:
            return None
        raise ModuleNotFoundError(f"No module named {module!r}", name=module)
    except ModuleNotFoundError as err:
        if err.name not in ours:
            raise
        dist = package or parts[0]
        raise MissingOptionalDependency(
            f"{feature} needs the optional package {dist!r}, which is not installed: "
            f'pip install "pymc-dpnoise[{extra}]"',
            name=err.name,
        ) from err
