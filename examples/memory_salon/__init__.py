"""The worked example adapter: an in-memory appointment book behind OSBP's platform port (``adapter.py``)."""
