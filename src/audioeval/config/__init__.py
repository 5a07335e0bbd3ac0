"""Layer 1, the task definition: the task schema and YAML loading (`task`), task and group discovery
(`registry`), prompt templates (`templates`), and the hooks a task names: response parsers (`parsers`),
judge verdict readers (`verdicts`) and judge roles (`judge_roles`)."""


def __getattr__(name: str) -> object:
    """Names of the old `audioeval.config` module of release 0.1, with a DeprecationWarning."""
    from audioeval.deprecation import moved_name

    return moved_name(__name__, name)
