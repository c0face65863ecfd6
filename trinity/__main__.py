import gc

from trinity.cli import main

code = main()
# Everything is written and closed by now. Interpreter exit would walk the whole heap (torch,
# the encoder, the event loop) in a final collection, seconds to tens of seconds on a busy box,
# which a supervisor's SIGTERM then waits out; frozen objects are left to the OS instead.
gc.freeze()
raise SystemExit(code)
