"""What the engine observes: CloudWatch Logs filter patterns and the metric filters they drive."""
