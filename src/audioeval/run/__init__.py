"""Layer 6, one evaluation run: preparing tasks (`prepared`, `requirements`, `conditions`), the streaming
pipeline (`evaluator`, `feed`, `serving`, `cache`, `judging`), processes (`distributed`), reference models
(`reference_models`) and the conductor that runs the stages in order (`conductor`)."""


def __getattr__(name: str) -> object:
    """Names of the old `audioeval.run` module of release 0.1, with a DeprecationWarning."""
    from audioeval.deprecation import moved_name

    return moved_name(__name__, name)
