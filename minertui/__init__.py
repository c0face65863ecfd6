"""minertui — the Textual workstation over the trinity engine. Only this package imports textual."""

__version__ = "0.1.0"
