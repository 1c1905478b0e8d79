"""The datamodule that feeds the trainer: rollout batches from the queue, as an IterableDataset."""
