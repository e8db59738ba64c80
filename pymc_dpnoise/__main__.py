"""``python -m pymc_dpnoise``: the ``pymc-dpnoise`` command line (see :mod:`pymc_dpnoise.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
