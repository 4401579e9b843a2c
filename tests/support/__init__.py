"""Helpers shared by the test suites, one module per concern."""
