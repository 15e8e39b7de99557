"""A small package for the filter tests: fpkg.core calls fpkg.util."""
