"""trinity.pool — see DESIGN §2."""
