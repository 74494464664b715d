"""Widgets: each displays state it is given (view.py) and never calls git, torch or a model."""
