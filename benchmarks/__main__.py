"""``python -m benchmarks``: run every workload for both savers and write the report."""

import sys

from benchmarks.orchestrate import main

sys.exit(main())
