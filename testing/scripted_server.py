"""The scripted server and its behaviours, under the name the tests import them by (r2mad/bench/scripted/server.py)."""
from r2mad.bench.scripted.behaviours import *  # noqa: F401,F403
from r2mad.bench.scripted.server import *  # noqa: F401,F403
