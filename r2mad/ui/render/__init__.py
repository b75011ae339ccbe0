"""Gradio-free renderers: transcripts, runs and labels to Markdown, HTML and tables."""
