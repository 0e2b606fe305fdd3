"""``python -m chipwise``: the same command line as the ``chipwise`` script."""

from chipwise.cli import main

if __name__ == "__main__":
    main()
