"""What to test next, and the record of what was tested."""
