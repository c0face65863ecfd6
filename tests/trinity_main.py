"""`trinity_main(argv) -> (exit code, stdout, stderr)`: the `trinity` CLI run in the test's own
process (tests/ is on the path: pyproject's pytest `pythonpath`).

A child process (`python -m trinity`) spends 1.5–3 s importing before it does anything; a test
that only checks what a command prints and returns does not need one. What differs from a child,
and how it is kept the same: argparse's SystemExit becomes the exit code; warnings follow
Python's start-up filters, not pytest's, and are written to stderr; the torch thread count is put
back afterwards (a resume may set the count its run recorded). Tests that need a process of their
own (a kill, a signal, a second engine holding a lock by pid) still start one.
"""

from __future__ import annotations

import contextlib
import io
import sys
import warnings
from collections.abc import Iterable

from trinity.cli import main

# Python's own warning filters at start-up (`python -m trinity` runs with these, not pytest's)
_STARTUP_FILTERS = [
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, None),
    ("ignore", PendingDeprecationWarning, None),
    ("ignore", ImportWarning, None),
    ("ignore", ResourceWarning, None),
]


def trinity_main(argv: Iterable[object]) -> tuple[int, str, str]:
    """`trinity ARGV` in this process, as the console script runs it (`main`, then SystemExit's
    code for argparse's exits): (exit code, stdout, stderr). A warning the command raises lands in
    stderr, as it would in a child process, so a "one error line" check still sees it. Spares
    the 1.5–3 s a child spends importing; the torch thread count is put back (a resume may match
    the count its run recorded)."""
    torch = sys.modules.get("torch")  # only if already loaded: importing it here would cost seconds
    threads = torch.get_num_threads() if torch is not None else None
    out, err = io.StringIO(), io.StringIO()

    def show(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
        err.write(warnings.formatwarning(message, category, filename, lineno, line))

    with warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        warnings.resetwarnings()
        for action, category, module in reversed(_STARTUP_FILTERS):
            warnings.filterwarnings(action, category=category, module=module or "")
        warnings.showwarning = show
        try:
            rc = main([str(a) for a in argv])
        except SystemExit as e:  # argparse: 2 on a bad flag, 0 on --help
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    torch = sys.modules.get("torch")
    if threads is not None and torch is not None and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return rc, out.getvalue(), err.getvalue()
