"""Layer 1, the task definition: the task schema and YAML loading (`task`), task and group discovery
(`registry`), prompt templates (`templates`), and the hooks a task names: response parsers (`parsers`),
judge verdict readers (`verdicts`) and judge roles (`judge_roles`)."""
