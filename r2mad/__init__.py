"""R²-MAD Studio: multi-agent LLM debate (MAD, MAD-M², TrueMAD, R²-MAD) with an experience memory."""
__version__ = "0.1.0"
