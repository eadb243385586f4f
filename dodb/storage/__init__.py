"""Canonical padded storage of private tables and the owner actions that write it.

``layout``    the fixed-width physical columns of a slot array;
``canonical`` writing (random placement) and reading (full scans) slot arrays;
``ingest``    protect / insert / replace: verify declarations, release sizes, store.
"""
