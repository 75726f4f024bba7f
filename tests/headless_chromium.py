"""The browser the browser tests drive: Debian's ``chromium-headless-shell``, through ``playwright``.

The headless shell is chromium's engine without the desktop browser around it (Debian packages it
from the same source as ``chromium``; playwright itself drives it for headless runs). On 2 cores,
the site and Lab tests side by side took 75 s and 132 core-seconds with it, 88 s and 154 with the
full ``chromium`` (the same tests and pages, one run each); the site test alone 42 s against 52.
``ROOFLINE_CHROMIUM`` names another executable; ``make browser`` installs this one with apt.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

CHROMIUM = os.environ.get("ROOFLINE_CHROMIUM", "/usr/bin/chromium-headless-shell")


def missing() -> str | None:
    """Why the browser cannot start here, or None when it can."""
    if Path(CHROMIUM).exists() or shutil.which(CHROMIUM):
        return None
    return f"no chromium at {CHROMIUM}; `make browser` installs Debian's chromium-headless-shell"
