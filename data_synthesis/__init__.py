"""Synthesis of judge training pairs: target-aware questions, answers with and without the source document."""
