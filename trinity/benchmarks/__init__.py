"""trinity.benchmarks — see DESIGN §2."""
