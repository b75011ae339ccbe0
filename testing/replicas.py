"""Scripted replicas, under the name the tests import them by (r2mad/bench/scripted/replicas.py)."""
from r2mad.bench.scripted.replicas import *  # noqa: F401,F403
