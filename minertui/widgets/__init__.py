"""Widgets by domain: run header, bars, curves, paged tables."""
