"""`python -m r2mad …` entry point."""
import sys

from r2mad.cli import main

sys.exit(main())
