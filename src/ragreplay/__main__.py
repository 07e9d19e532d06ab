"""``python -m ragreplay``: the ``ragreplay`` command, for an environment whose scripts are not on the PATH."""

from __future__ import annotations

import sys

from ragreplay.cli.app import main

if __name__ == "__main__":
    sys.exit(main())
