from audioeval.cli import console

if __name__ == "__main__":
    console()
