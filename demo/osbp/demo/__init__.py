"""`make demo` and the trace gallery: the whole stack end to end, as an agent host sees it."""
