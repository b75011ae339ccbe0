"""TrueDMAD (Bao et al. 2026): DMAD with TrueMAD's one-to-one advice plug-in (methods/truemad.Advice), which
the registry adds to every method listed with advice. Our re-implementation: no official code exists."""
from __future__ import annotations

from r2mad.methods.dmad import DMAD


class TrueDMAD(DMAD):
    name = "truedmad"
