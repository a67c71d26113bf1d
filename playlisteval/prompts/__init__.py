"""Prompt templates (one Jinja2 file per role) and their response schemas."""
