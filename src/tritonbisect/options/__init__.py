"""What the bisecting commands share, below both the commands and the domains' own commands:
the options every bisect takes and the settings made from them (`bisect_options`), the start
of a session and its hand-over to the engine (`launch`), and the renamed-option helper
(`alias`). A domain's `command.py` imports these; nothing here imports a command or a domain.
"""
