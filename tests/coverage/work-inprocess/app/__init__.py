"""A small package: main.py picks a path from its argument."""
VERSION = "1.0"
