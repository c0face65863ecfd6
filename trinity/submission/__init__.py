"""trinity.submission — see DESIGN §2."""
