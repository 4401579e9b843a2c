"""The platform-neutral OSBP v0.1.0 core: models, mandate validation, the approval gate, money and time."""
