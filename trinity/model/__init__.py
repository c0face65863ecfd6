"""trinity.model — see DESIGN §2."""
