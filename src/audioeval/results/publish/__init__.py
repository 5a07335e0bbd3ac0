"""`audioeval push-results`: a finished run as a Hugging Face dataset repository (results.json, the summary and
reports, one parquet file of per-sample details per task, a dataset card), and optionally the Hub's evaluation
results for the model (`.eval_results/*.yaml`, opened as a pull request on the model repository)."""
