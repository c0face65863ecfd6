"""trinity.optim — see DESIGN §2."""
