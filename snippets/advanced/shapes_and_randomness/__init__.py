"""Uneven shapes, random numbers that do not depend on the mesh, loading data, memory kinds."""
