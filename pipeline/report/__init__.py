"""Reports: paper-style tables and figures regenerated from the warehouse."""
