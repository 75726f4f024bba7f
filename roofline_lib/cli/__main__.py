"""``python -m roofline_lib.cli``: the same as the ``roofline`` command."""

import sys

from . import main

sys.exit(main())
