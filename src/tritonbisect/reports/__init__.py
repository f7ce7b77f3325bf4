"""What a session says to the user: the live display while it runs, and the Markdown and JSON reports after."""
