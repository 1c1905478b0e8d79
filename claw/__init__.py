"""claw: learn online from the conversations an agent already has."""

__version__ = "0.1.0"
