"""Utilities every stage shares: stable ids and seeded hashes (`ids`), a process-pool map over
files (`pool`) and the one logging set-up (`logs`)."""
