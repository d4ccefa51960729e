"""Training side (needs the ``train`` extra: torch). The runtime never imports this package."""
