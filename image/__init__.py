"""Sequential reference engine: Kafka's metadata image, deltas and batch loader in pure Python."""
