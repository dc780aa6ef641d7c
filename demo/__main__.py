"""Entry point of ``python -m demo`` (``make demo``)."""

from demo.main import main

raise SystemExit(main())
