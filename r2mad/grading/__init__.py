"""Answers: kinds, extraction, equivalence, grouping, voting and scoring; math checking off the event loop."""
