"""What a whole build costs, job by job, and how long it takes on N cores (bench/README.md)."""
