"""What the panel study ``studies/judge_labeling`` needs from the judge engine."""
