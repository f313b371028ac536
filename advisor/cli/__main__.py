"""`python -m advisor.cli`."""

from advisor.cli import main

main()
