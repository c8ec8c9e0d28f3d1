"""Sharding parameters: by rules on their paths, or by annotations on the model."""
