"""Serving many visitors from one process: the app's services, the line, visitors; the OpenAI-compatible server."""
