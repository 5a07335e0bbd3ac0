"""One wing per benchmark: `audioeval.benchmarks.<name>` holds the benchmark's episode code, sound
synthesizers, parsers (`parser` module), judge verdict readers (`verdicts`) and report (`report`).

The core never imports a wing by name: the registered parsers, verdict readers and reports of every wing
are found by walking this package (audioeval.hooks). The benchmark's task YAML and templates live in
tasks/<benchmark>/, its dataset builder in datasets_builders/<benchmark>/, its metrics in metrics/.
"""
