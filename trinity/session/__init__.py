"""trinity.session — see DESIGN §2."""
