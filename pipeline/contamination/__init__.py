"""Known contamination: what each source is (license, release date, the first pinned version each function and
API appears in) and, per item and model, whether the model could have read it (docs/contamination.md)."""
