"""What the notebooks display: tables, figures, the live training dashboard, the trajectory browser."""
