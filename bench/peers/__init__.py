"""Ours against a peer tool (another library doing the same computation) on the same inputs, each side in its own
process: `python -m bench peers --project PATH` runs them all on a built project (bench/README.md)."""
