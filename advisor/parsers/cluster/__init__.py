"""msprof-analyze's cluster output: what it merged over the ranks of a job."""
