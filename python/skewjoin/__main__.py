"""`python -m skewjoin ...` runs the skewjoin command."""

import os
import sys

from ._run import SkewjoinError, binary

try:
    path = binary()
except SkewjoinError as e:
    sys.exit(f"skewjoin: error: {e.message}")
os.execv(path, [path, *sys.argv[1:]])
