from audioeval.cli import main
from audioeval.fast_exit import exit_without_teardown

if __name__ == "__main__":
    exit_without_teardown(main())
