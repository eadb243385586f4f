"""``dodb gateway``: an analyst-side Arrow Flight SQL endpoint in front of a ``dodb serve`` engine
(docs/served.md §The gateway).  Imported only by the ``gateway`` command and its tests."""
