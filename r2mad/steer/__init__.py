"""Steering a saved debate: fork it from a round with one thing changed (`fork.py`, R²-MAD's memory
block: `cases.py`), link forks to their parents in the run store (`links.py`), and blame a failure on one
turn by counterfactual replay (`blame.py`). The debate itself is the one loop of r2mad.debate, fed
recorded rounds to replay."""
