"""Training tests use the shared tiny-model fixtures of tests/conftest.py."""
