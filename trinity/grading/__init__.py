"""trinity.grading — see DESIGN §2."""
