"""``python -m fedtheory.figures [NAME ...]``: the same as ``fedtheory figures``."""

import sys

from fedtheory.figures.command import main

sys.exit(main())
