"""The model families of ``pymc-dpnoise fit``: one module per family of distributions.

Each module holds its commands' options, reader (data kind), checks and builders together and
declares them as one ``FAMILY`` (:class:`~pymc_dpnoise.cli._spec.Family`: its
:class:`~pymc_dpnoise.cli._spec.ModelSpec` rows and a worked example).  The modules import only
the layers below them (:mod:`.._base`, :mod:`.._spec`, :mod:`.._options`, :mod:`.._columns`)
and never each other; :mod:`pymc_dpnoise.cli._registry` collects them.  This package file
imports nothing, so importing one family loads only that family.

=================  ==========================================================================
module             commands
=================  ==========================================================================
``clipped``        ``clipped-normal``, ``clipped-exponential``
``counts``         ``noisy-binomial``, ``noisy-poisson``
``expfam``         ``truncated-exponential``, ``truncated-poisson``, ``truncated-normal``,
                   ``noisy-multinomial``
``frequency``      ``oue``, ``sue``, ``unary-encoding``, ``krr``
``regression``     ``linreg``, ``logreg``
``sufficient``     ``ss-normal``
=================  ==========================================================================
"""
