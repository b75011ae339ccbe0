"""Scripted OpenAI-compatible servers on loopback (behaviours, one server, a fleet of replicas): what `r2mad bench`
times debates against, and what the tests script faults with; not a model."""
