"""An item's contamination label for a model (docs/contamination.md; the warehouse's contamination_label macro), and
those known before inference, which a zoo cap may draw by (a pretrained model's item dates against its
training_cutoff). On the ground floor, so that a zoo entry (pipeline.models.entries) and the labelling
(pipeline.contamination.labels) read one list without either importing the other."""

LABELS = ("read", "not_read", "released_after_cutoff", "released_before_cutoff", "unknown")
CUTOFF_LABELS = ("released_after_cutoff", "released_before_cutoff")
