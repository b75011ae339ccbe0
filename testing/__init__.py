"""Scripted and faulty OpenAI-compatible servers for the tests and the bench; not part of the library."""
