"""Layer 4, model backends behind `generate(requests) -> responses`: the contract (`base`), the registry of
backends by name (`registry`), API endpoints (`openai_chat`, `api/`), local checkpoints (`hf/`, `vllm_backend`,
`text_chat`), `cascade`, `pocketsphinx_asr` and the generic baselines (`baselines/`)."""
