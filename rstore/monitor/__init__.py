"""Watching a queue: health samples (:mod:`rstore.monitor.health`), Prometheus metrics, reports."""
