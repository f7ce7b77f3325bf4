"""Pass-level narrowing: after a culprit is found, which compiler pass did it change?"""
