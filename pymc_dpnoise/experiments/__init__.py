"""The papers' experiments: one module per notebook, the figure runners the notebooks call.

Each module mirrors one notebook in ``notebooks/`` (same name), holds the ``SETTINGS`` of its
fast and full modes, the model builders and the ``run_*`` functions that produce the figures'
tables, and the SBC problems of its models.  Shared pieces: :mod:`.toolkit` (result caching,
SBC tables, the command line), :mod:`pymc_dpnoise.diagnostics` (SBC driver, coverage, KS,
MMD, ECDF distance, RMSE, AUC, :func:`~pymc_dpnoise.diagnostics.sample_compiled` to fit a
compiled model), :mod:`pymc_dpnoise.datasets` (feature matrices, splits, scaling),
:mod:`pymc_dpnoise.baselines` (the comparison methods and non-private fits).

==========================  =========================================  ===================================  ==========================
paper figure                module.function                            notebook                             results
==========================  =========================================  ===================================  ==========================
LDP Fig. 1 (SBC, Gaussian)  ``ldp_calibration.run_grid("fig1")``       ``ldp_calibration.ipynb``            ``results/sbc``
LDP Fig. 11 (SBC, exp.)     ``ldp_calibration.run_grid("fig11")``      ``ldp_calibration.ipynb``            ``results/sbc``
LDP Fig. 10 (SBC, hist.)    ``ldp_calibration.run_grid("fig10")``      ``ldp_histograms.ipynb``             ``results/sbc``
LDP Fig. 3 / Fig. 9         ``ldp_histograms.run_fig3``                ``ldp_histograms.ipynb``             ``results/frequency``
LDP Fig. 2 (Kosarak)        ``ldp_histograms.run_fig2``                ``ldp_histograms.ipynb``             ``results/frequency``
histogram hierarchy         ``ldp_histograms.run_hierarchical``        ``ldp_histograms.ipynb``             ``results/frequency``
LDP Fig. 4 (Wine)           ``ldp_regression.run_fig4``                ``ldp_regression.ipynb``             ``results/regression``
LDP Fig. 5 (Adult)          ``ldp_regression.run_fig5``                ``ldp_regression.ipynb``             ``results/regression``
regression hierarchy        ``ldp_regression.run_hierarchical``        ``ldp_regression.ipynb``             ``results/regression``
LDP §3.2.3 (SBC)            ``ldp_regression.run_grid``                ``ldp_regression.ipynb``             ``results/sbc_regression``
GLM Figs. 3, 4              ``glm_sufficient_statistics.run_central``  ``glm_sufficient_statistics.ipynb``  ``results/glm``
GLM Fig. 5                  ``glm_sufficient_statistics.run_fig5``     ``glm_sufficient_statistics.ipynb``  ``results/glm``
LDP Figs. 4, 5 (suff. st.)  ``glm_sufficient_statistics.run_ldp``      ``glm_sufficient_statistics.ipynb``  ``results/glm``
SSNormalApprox SBC          ``glm_sufficient_statistics.run_grid``     ``glm_sufficient_statistics.ipynb``  ``results/sbc_sufficient``
B&S Fig. 1a, 1b (SBC)       ``expfam.run_calibration``                 ``expfam.ipynb``                     ``results/expfam``
B&S Fig. 1c (MMD)           ``expfam.mmd_table``                       ``expfam.ipynb``                     ``results/expfam``
small-area hierarchy        ``expfam.run_hierarchical``                ``expfam.ipynb``                     ``results/expfam``
Zhang et al. Fig. 1         ``posterior_release.run_fig1``             ``posterior_release.ipynb``          ``results/posterior_release``
Zhang et al. Fig. 2 (Wine)  ``posterior_release.run_fig2``             ``posterior_release.ipynb``          ``results/posterior_release``
release readings (SBC)      ``posterior_release.run_sbc_exact``        ``posterior_release.ipynb``          ``results/posterior_release``
privacy checks              ``posterior_release.run_privacy``          ``posterior_release.ipynb``          ``results/posterior_release``
small areas (SBC)           ``real_releases.run_coverage``             ``real_releases.ipynb``              ``results/real_releases``
small areas (real release)  ``real_releases.fit_release``              ``real_releases.ipynb``              ``results/real_releases``
==========================  =========================================  ===================================  ==========================

Command-line entry points (``--mode fast`` or ``--mode full``; results cached, resumable)::

    python -m pymc_dpnoise.experiments.ldp_calibration --mode full
    python -m pymc_dpnoise.experiments.ldp_regression --mode full --naive
    python -m pymc_dpnoise.experiments.glm_sufficient_statistics --mode full
    python -m pymc_dpnoise.experiments.expfam --mode full
    python -m pymc_dpnoise.experiments.posterior_release --mode full
    python -m pymc_dpnoise.experiments.real_releases --mode full --jobs 1 --skip-fit

Each new paper gets a module here with its notebook of the same name.  Nothing outside this
subpackage imports from it: the library does not depend on the experiments.
"""
