"""Error gallery: the errors sharded code hits most, each captured, explained, fixed."""
