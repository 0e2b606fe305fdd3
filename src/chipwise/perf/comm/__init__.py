"""Moving bytes between chips: collective algorithms over each fabric (NVLink, ICI, IB, DCN)."""
