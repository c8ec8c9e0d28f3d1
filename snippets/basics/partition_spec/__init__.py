"""PartitionSpec: what each entry means, shard shapes, and the errors a wrong spec gives."""
