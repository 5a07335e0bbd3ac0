"""Layer 6, one evaluation run: preparing tasks (`prepared`, `requirements`, `conditions`), the streaming
pipeline (`evaluator`, `feed`, `serving`, `cache`, `judging`), processes (`distributed`), reference models
(`reference_models`) and the conductor that runs the stages in order (`conductor`)."""
