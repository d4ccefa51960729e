"""``python -m emts.cli``: the ``emts`` command."""

import sys

from emts.cli.entry import main

sys.exit(main())
