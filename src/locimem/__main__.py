"""``python -m locimem`` runs the command line."""

import sys

from locimem.cli import main

sys.exit(main())
