"""The training job: SFT warm-up, TRL's GRPOTrainer, evaluations, resume, and the dry-run plan."""
