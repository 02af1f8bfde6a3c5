"""``python -m rstore_cli``: the same as the ``rstore`` command."""

from .entry import main

if __name__ == "__main__":
    main()
