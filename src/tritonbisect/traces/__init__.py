"""Reading tritonparse traces: the events, the kernels and launches they hold, the IR they recorded."""
