"""Many runs -> numbers: prompts (parse), lanes (one run -> RunRecord), workload (run), summary, recommend, predict,
race and bench. Every statistic is computed in core/stats.py."""
