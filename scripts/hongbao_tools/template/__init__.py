"""template.yaml as generated from template/ and functions.json (scripts/template.py)."""
