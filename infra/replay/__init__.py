"""`python -m infra.replay`: batching policies replayed on recorded arrival times."""
