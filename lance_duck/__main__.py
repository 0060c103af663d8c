"""``python -m lance_duck ...`` runs the CLI (see ``lance_duck.integrations.cli.main``)."""
import sys

from .integrations.cli import main

sys.exit(main())
