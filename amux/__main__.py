"""`python -m amux` is the `amux` command."""

import sys

from amux.cli.main import main

sys.exit(main())
