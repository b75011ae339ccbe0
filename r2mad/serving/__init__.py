"""Serving many visitors from one process: admission (the line), the owner's allowance, visitors, the OpenAI-compatible server."""
