"""`python -m tritonbisect.cli`: the same as the `tritonbisect` command."""

import sys

from tritonbisect.cli import main

sys.exit(main())
