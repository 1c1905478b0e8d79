"""`python -m claw.compare <dir>`: see claw/compare/__init__.py."""

from claw.compare import main

main()
