"""The app's modes: key, screen module (`minertui.screens.<module>`), label, in key order."""

MODE_KEYS = [
    ("1", "runs", "Runs"),
    ("2", "train", "Train"),
    ("3", "ledger", "Ledger"),
    ("4", "traces", "Traces"),
    ("5", "analysis", "Analysis"),
    ("6", "submit", "Submit"),
    ("7", "playground", "Playground"),
]
MODE_MODULES = tuple(mode for _key, mode, _label in MODE_KEYS)
