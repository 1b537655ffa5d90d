"""The report side: exported counterexamples, CI outputs (JUnit, job summary), documents."""
