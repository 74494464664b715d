"""Inductor output code as a task\x27s Triton start: read the generated module, rewrite it to a baseline."""
