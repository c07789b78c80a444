"""template.yaml against another revision's (scripts/template.py --compare)."""
