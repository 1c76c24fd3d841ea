"""Stage 6: the model zoo. Entries in params.yaml (`models.zoo`), the pipeline-trained
code LMs and their random twins, model cards, and the one loader every family uses."""
