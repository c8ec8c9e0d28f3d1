"""Checkpoints across meshes: save a sharded train state, restore it onto other devices."""
