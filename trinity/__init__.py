"""trinity — the headless engine of minertui.

A frozen small LM reads the question, a tiny head (plus SVF scales on one layer) picks which
model of a fixed pool answers and in which role; the head is trained by separable CMA-ES.
This package never imports textual (tests/test_boundaries.py enforces it).
"""

__version__ = "0.1.0"
