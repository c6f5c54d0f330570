"""``python -m kleene.cli``: the ``kleene`` command, as ``python -m kleene`` (``kleene.cli`` was a module)."""

import sys

from kleene.cli import main

sys.exit(main())
