"""Typed settings: the debate dataclasses, YAML loading and checking, the settings a person sets declared once."""
