"""``python -m kleene``: the same command as the ``kleene`` script, for when it is not on PATH."""

import sys

from kleene.console import main

if __name__ == "__main__":
    sys.exit(main())
