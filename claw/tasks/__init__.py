"""Tasks: prompt sets, word-problem generators and their answer checkers — plain data and pure functions,
below the sources (claw/rollout, claw/users) and the evaluation that use them."""
