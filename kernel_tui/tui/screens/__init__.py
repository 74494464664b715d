"""Screens: the main run screen, history, the picker, and the small modals."""
