"""Worked examples for integrators (not part of the installed ``osbp`` distribution)."""
