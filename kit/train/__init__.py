"""The training job: model loading, SFT warm-up, TRL's GRPOTrainer, evaluations, run folders, resume."""
