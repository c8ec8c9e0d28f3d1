"""FSDP: parameters and optimizer state split over the data axis, gathered for use."""
