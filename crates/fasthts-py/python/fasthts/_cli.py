"""The ``fasthts`` command installed with the package (``[project.scripts]``
in pyproject.toml): the Rust command line's own ``main``, run in this
process, so it behaves as the ``fasthts`` binary does."""

import sys

from ._fasthts import run_cli


def main() -> None:
    sys.exit(run_cli(sys.argv))
