"""`python -m infra.account`: the account checks before a deploy (infra/account/__init__.py)."""

import sys

from infra.account import main

sys.exit(main())
