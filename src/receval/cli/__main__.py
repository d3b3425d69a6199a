"""``python -m receval.cli``."""

import sys

from receval.cli import main

sys.exit(main())
