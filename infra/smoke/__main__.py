"""`python -m infra.smoke`: watch the first message (infra/smoke/__init__.py)."""

import sys

from infra.smoke import main

sys.exit(main())
