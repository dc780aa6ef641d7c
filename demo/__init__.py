"""``python -m demo``: the whole story on an embedded local AWS endpoint (see ``demo.main``)."""
