"""A bisect session: its phases, the journal of every step, the loop that drives a phase to its answer, and corrections."""
