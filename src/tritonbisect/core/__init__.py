"""The floor every other package stands on: outcomes, processes, git facts, atomic files, the lock, errors. Imports nothing of ours above it."""
