"""Data: sources (downloads with checksums, packaged fixtures), benchmark builders, the filter."""
