"""`python -m advisor`: the same command line as the `advisor` script."""

from advisor.cli import main

main()
