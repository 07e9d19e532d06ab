"""Human review: queues for reviewers (regression set contested cases and wounds, a run's BAD_NO_FIT cases, the
weekly calibration sample of judged shadow rows), judge-vs-human calibration, and reviews as JSONL."""
