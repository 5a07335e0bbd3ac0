"""Hugging Face checkpoints: finding the family, loading processor and model, building the chat prompt and the
audio inputs. Shared by the `hf` backend (model.py) and `vllm` (models/vllm_backend.py)."""
