"""A synthetic merchant booking platform: a foreign system of record with its own native API.

It imports nothing from the rest of osbp: the adapter must translate its dialect.
"""
