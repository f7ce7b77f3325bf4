"""`python -m tritonbisect`: the same as the `tritonbisect` command."""

import sys

from tritonbisect.cli import main

sys.exit(main())
