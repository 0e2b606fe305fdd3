"""Per-op times on one chip: the roofline, its GPU and TPU refinements, one layer's ops."""
