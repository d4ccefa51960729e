"""``python -m emts.cli``: the ``emts`` command."""

import sys

from emts.cli import main

sys.exit(main())
