"""``python -m helpers.runner``: the grid runner's command line (``helpers.runner.cli``)."""

import sys

from helpers.runner.cli import run

sys.exit(run())
