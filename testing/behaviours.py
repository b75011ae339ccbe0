"""The scripted server's behaviours, under the name the tests import them by (r2mad/bench/scripted/behaviours.py)."""
from r2mad.bench.scripted.behaviours import *  # noqa: F401,F403
