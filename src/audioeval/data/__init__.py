"""Layer 3, episodes as data: the builder contract (`builders`), what a benchmark declares about itself
(`about`) and its dataset card (`card`), stored datasets read back as episodes (`stored`,
`stored_episodes`), `audioeval.load_dataset` by name (`by_name`), `audioeval build`/`push` (`hub`) and the real
corpora the builders read (`corpora`). Nothing here imports `datasets` at package import time."""
