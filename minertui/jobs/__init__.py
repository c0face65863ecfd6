"""Child-process jobs the app runs (they may import torch; the app never does)."""
