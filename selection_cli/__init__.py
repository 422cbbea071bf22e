"""The ``content-selection`` command: the top layer, importing every other one, imported by none."""
