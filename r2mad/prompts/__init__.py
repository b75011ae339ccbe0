"""Prompt templates, in our own words, one file per method family. Only text; no model calls."""
