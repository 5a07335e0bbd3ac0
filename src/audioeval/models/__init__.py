"""Layer 4, model backends behind `generate(requests) -> responses`: the contract (`base`), the registry of
backends by name (`registry`), API endpoints (`openai_chat`, `api/`), local checkpoints (`hf/`, `vllm_backend`,
`text_chat`), `cascade`, `pocketsphinx_asr` and the generic baselines (`baselines/`)."""


def __getattr__(name: str) -> object:
    """Names of the old `audioeval.models` module of release 0.1, with a DeprecationWarning."""
    from audioeval.deprecation import moved_name

    return moved_name(__name__, name)
