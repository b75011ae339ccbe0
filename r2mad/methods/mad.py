"""MAD (Du et al. 2024): every agent keeps its own chat history and, each round, reads the other
agents' previous answers and gives an updated one. This is the loop's default behaviour."""
from __future__ import annotations

from r2mad.methods.base import Method


class MAD(Method):
    name = "mad"
