"""Explicit sharding: the sharding is part of each array's type and is decided while tracing."""
