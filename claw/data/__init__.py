"""Data: the prompt sets that ship with claw and the datamodule that feeds the trainer."""
