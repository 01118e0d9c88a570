"""Posttrain's control plane: the Django project (API, tenancy, files, jobs, billing)."""
