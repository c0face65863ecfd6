"""trinity.analysis — see DESIGN §2."""
