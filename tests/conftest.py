"""The suite's root: loading this file puts ``tests/`` on ``sys.path`` (pytest's prepend import mode),
so helpers shared by several test folders (``fuzzing``) import by their module name."""
